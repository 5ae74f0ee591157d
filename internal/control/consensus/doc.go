// Package consensus runs Raft (go.etcd.io/raft/v3) underneath the control
// plane's log. Raft is a pure state machine: this package does what it
// leaves to its caller, and nothing of the control plane's meaning.
//
//   - Storage: raft's entries, hard state and snapshots live in the node's
//     event log (internal/control/eventlog: framed, checksummed records, rotation,
//     torn-tail recovery, a free-space floor). A record holds one entry or
//     one hard state; a later entry at an index already written supersedes
//     it and the rest of the tail, as in etcd's WAL. A snapshot holds raft's
//     snapshot, the hard state and the entries after it. Everything a Ready
//     asks to keep is fsynced before its messages leave.
//   - Transport: Frames carries raft messages on any stream (QUIC streams of
//     ALPN skulk/raft/1 in a cluster); Sender keeps one stream per peer.
//   - The driver: Node owns the RawNode in one goroutine, ticks it, steps
//     incoming messages, saves, sends, hands committed entries to the
//     StateMachine in order, and compacts the log behind a snapshot.
//
// A log that stops writing (a full disk) takes its node out of consensus:
// it sends nothing, so it never promises what it did not keep, until the
// disk takes writes again and the node restarts raft from what it kept.
package consensus
