// Package transport is the node's QUIC endpoint: one UDP socket (default
// port 52417) carries every inter-node plane, each on its own ALPN
// (ALPNControl, ALPNData, ALPNEdge, and ALPNResponses for lookups of stored
// Responses conversations).
//
// Authentication has three layers, all checked before a connection reaches a
// caller:
//
//  1. Mutual TLS 1.3 with per-node self-signed Ed25519 certificates. The key
//     is persisted in the node's home (KeyFile, mode 0600); the certificate's
//     common name is the node id.
//  2. A cluster proof on the first bidirectional stream: each side sends its
//     network version and HMAC-SHA256(k, role || TLS exporter), with k
//     derived from (cluster key, network version). A node of another network
//     version or another cluster key is refused at once, and both sides see
//     why: the refusing side logs one line, and the refused side's Dial
//     returns a *RefusedError (the QUIC close carries the reason).
//  3. Config.VerifyPeer(node, key): the caller (membership) checks that the
//     certificate's public key equals the key the peer gossiped.
//
// Outbound connections are cached per (peer, ALPN) and redialled when they
// die; inbound connections are handed to the Handler registered for their
// ALPN and are never used for outbound traffic (the edge plane relies on the
// dialler opening the streams). Every connection runs a health monitor: a
// datagram ping every PingInterval with a PingBudget (5 s) for its answer;
// PingFailures (3) consecutive misses close the connection with ErrUnhealthy.
//
// Concurrency: an *Endpoint and a *Conn are safe for concurrent use. The
// endpoint owns every goroutine it starts (accept loop, handshakes, health,
// handlers) and Close waits for all of them.
//
// Imports: the standard library, quic-go, ids and clusterkey. No domain
// service.
package transport
