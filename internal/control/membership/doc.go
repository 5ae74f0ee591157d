// Package membership is the node's view of the cluster: a wrapper over
// hashicorp/memberlist (SWIM gossip on port 52416, tcp+udp) that
//
//   - encrypts all gossip with an AES-256 key derived from the cluster key
//     and the network version (clusterkey.Derive("gossip")), so a node of
//     another key or network version cannot join; both sides log one clear,
//     rate-limited line ("gossip from ADDR could not be decrypted: different
//     cluster key or network version") and nothing half-works;
//   - gossips typed node meta (Meta: node id, network version, software
//     version and commit, Ed25519 public key, API and QUIC addresses),
//     compactly encoded and checked against memberlist's 512-byte limit;
//     members whose meta does not decode or names another network version are
//     refused;
//   - joins through bootstrap peers (retried while the node is alone) and
//     through mDNS on the LAN (service _skulk._udp, advertising the gossip
//     address);
//   - delivers membership events (join, leave, failed, update) on one
//     channel to one owner;
//   - carries telemetry: small last-write-wins readings keyed by (node, key)
//     and ordered by version, spread by gossip broadcasts and push/pull, in
//     an admission map bounded to 256 keys.
//
// VerifyPeer checks a QUIC peer's certificate key against the key it
// gossiped (transport.Config.VerifyPeer).
//
// Concurrency: a *Membership is safe for concurrent use. It owns its
// goroutines (event pump, bootstrap and mDNS loops) and Close waits for
// them. memberlist's delegate callbacks never block.
//
// Imports: the standard library, memberlist, mdns, ids and
// transport/clusterkey; no domain service.
package membership
