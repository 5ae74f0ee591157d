// Package dataplane moves opaque payload bytes between pipeline stages: a
// shared-memory arena per node, single-producer single-consumer byte rings
// leased from it, object records framed inside those rings, and one
// persistent QUIC uni-stream per edge between nodes (swactor spec §17–§40).
// No runner uses it yet: runners serve whole models only
// (runner.ErrShardUnsupported), so no activations cross nodes so far.
//
// Data path of one edge:
//
//	runner --objects--> egress ring --send pump--> QUIC uni-stream
//	  --recv pump--> ingress ring --objects--> runner
//
// The pumps are byte-blind; only the ObjectReader and ObjectWriter at the
// runner side parse or frame object records. Backpressure is ring space plus
// QUIC flow control; there are no credits.
//
// Ring header layout (little-endian, 256 bytes, every cursor on its own cache
// line so the two processes do not false-share):
//
//	0   magic      u32  "SKRG"
//	4   version    u16
//	6   header_len u16  (256)
//	8   ring_id    u64
//	16  capacity   u64
//	64  commit     u64  atomic, written by the producer only
//	128 consume    u64  atomic, written by the consumer only
//	192 state      u32  atomic bit set (producer closed, consumer closed, faulted)
//	196 wake       u32  atomic bit set (reader waiting, writer waiting)
//
// Object record: a 40-byte ObjectHeader {magic u32, version u16, header_len
// u16, object_id u64, sequence u64, extent u64, flags u32, reserved u32}
// followed by exactly extent payload bytes. The edge stream starts with an
// 8-byte big-endian edge id.
//
// Concurrency: a Producer and a Consumer are each used by one goroutine; the
// two may live in different processes. ArenaManager and Driver each own their
// state in one goroutine and are safe for concurrent use.
//
// Imports: the standard library, golang.org/x/sys; no domain service.
package dataplane
