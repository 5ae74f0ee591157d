// Package eventlog is the disk event log: an append-only sequence of opaque
// records, each with a caller-supplied index that rises by exactly one, plus
// rotation into compressed archives, snapshots, crash recovery and a
// counting-only degraded mode for when the disk fights back.
//
// The log stores bytes. It does not know what an event is and must import
// neither internal/control/event nor internal/control/state (a test enforces it).
//
// # Files
//
// A log is one directory:
//
//	events.bin              the live file, appended to
//	events.N.bin.zst        archives: earlier live files, zstd-compressed,
//	                        N = 1, 2, 3, ... in index order
//	snapshot.I.bin          snapshot blobs at index I (20 decimal digits)
//	events.lost             an unacknowledged loss of history (JSON)
//	events.lost.acknowledged the last loss acknowledged, for the record
//	events.bin.corrupt-T    a damaged live file kept aside at time T (UTC);
//	                        the operator deletes it when done with it
//	*.tmp                   unfinished atomic writes, deleted on Open
//
// # Record format
//
// The live file and the decompressed content of an archive share one format:
// a 20-byte file header followed by records. All integers are big-endian;
// CRC is CRC-32C (Castagnoli).
//
//	file header (20 bytes)
//	+-----------+-------------+------------+------------+
//	| magic (6) | version (2) | base (8)   | CRC (4)    |
//	| "SKULKL"  | 1           | 1st index  | of bytes 0-15
//	+-----------+-------------+------------+------------+
//
//	record (16 + length bytes)
//	+------------+-----------+-------------------+---------+
//	| length (4) | index (8) | payload (length)  | CRC (4) |
//	+------------+-----------+-------------------+---------+
//	CRC covers length, index and payload. length <= MaxPayload.
//
// The first record of a file has index base, the next base+1, and so on; the
// base of each file is the index after the last record of the file before it.
// An empty live file still says, through its base, what the next index is.
//
// # Writing and durability
//
// Append writes one whole record per write call. With SyncEveryAppend (the
// default) each Append is fsynced before it returns; with SyncManual records
// are durable only after Sync. When the live file reaches Options.RotateBytes
// it is compressed into the next archive by an atomic write (temporary file,
// fsync, rename, fsync of the directory) and a new live file is started the
// same way, so a crash at any point leaves either the old or the new files
// whole. Archives beyond Options.ArchiveCapBytes in total are deleted oldest
// first. Snapshots are written atomically the same way; the newest two are
// kept.
//
// # Recovery
//
// Open scans the live file. A record cut short by a crash (a torn write:
// the file ends inside it, or only zeros follow) ends the scan: everything
// before it is kept, the tail is truncated, and Status().Recovery reports the
// dropped bytes and a *CorruptionError (Torn) saying why. Nothing is lost
// that was acknowledged: the record's Append never returned.
//
// Damage is another matter: a record that fails its CRC (or has an
// impossible length, or an index out of sequence) with whole records after
// it, a damaged last record that is whole, or an unreadable file header.
// Then the log held records it no longer can read. Open keeps the good
// part all the same, but first records the loss in events.lost (so every
// later Open reports it too) and keeps the damaged file aside as
// events.bin.corrupt-TIMESTAMP; Status().Recovery.Loss is a *LossError,
// "history lost after index N", until Reset replaces the history (a
// follower installing its master's snapshot) or the loss is acknowledged
// (AcknowledgeLoss). A snapshot at or past the damage holds what was lost:
// no loss then, and the log goes on after the snapshot.
//
// A crash during rotation can leave both the new archive and the old live
// file: Open keeps the archive and starts a fresh live file after it.
//
// # Degraded mode
//
// Any write error (ENOSPC, EIO, a failed fsync or rotation) and a free-space
// reading under the floor (taken on Open, every Options.FreeSpaceCheckEvery
// appends and on every Heal) put the log into counting-only mode: Append
// still checks and advances the index so the owner's event ordering and
// follower replay stay coherent, but nothing more is written. The floor is
// Options.FreeSpaceFloor, by default FloorFor the disk's size (2 GiB, or 5%
// of a smaller disk). Status reports the cause, the floor and the free
// space; Options.OnDegraded is called once, at the transition. Reading
// indices that were only counted returns ErrNotWritten.
//
// The owner calls Heal every few seconds. When the log degraded for want of
// space and the disk has room again, Heal leaves the mode: it stores the
// owner's state at LastIndex as a snapshot (the counted records exist
// nowhere else), drops the older history, which has a hole, and writes on
// from there. Other faults stay until the log is reopened.
//
// # Concurrency
//
// A Log and its Iterators are not safe for concurrent use: one goroutine (the
// master's) owns the log. Appending while an Iterator is open is allowed on
// that goroutine; the Iterator sees the new records and follows rotations.
package eventlog
