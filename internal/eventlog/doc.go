// Package eventlog is the disk event log: an append-only sequence of opaque
// records, each with a caller-supplied index that rises by exactly one, plus
// rotation into compressed archives, snapshots, crash recovery and a
// counting-only degraded mode for when the disk fights back.
//
// The log stores bytes. It does not know what an event is and must import
// neither internal/event nor internal/state (a test enforces it).
//
// # Files
//
// A log is one directory:
//
//	events.bin              the live file, appended to
//	events.N.bin.zst        archives: earlier live files, zstd-compressed,
//	                        N = 1, 2, 3, ... in index order
//	snapshot.I.bin          snapshot blobs at index I (20 decimal digits)
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
// Open scans the live file. A record cut short by a crash (a torn write) ends
// the scan: everything before it is kept and the tail is truncated. A record
// whose CRC does not match, whose length is impossible, or whose index is out
// of sequence also ends the scan there; Status().Recovery reports the
// dropped bytes and a *CorruptionError saying why. A crash during rotation
// can leave both the new archive and the old live file: Open keeps the
// archive and starts a fresh live file after it.
//
// # Degraded mode
//
// Any write error (ENOSPC, EIO, a failed fsync or rotation) and a free-space
// reading under Options.FreeSpaceFloor (taken on Open and every
// Options.FreeSpaceCheckEvery appends) put the log into counting-only mode
// for the rest of its life: Append still checks and advances the index so
// the owner's event ordering and follower replay stay coherent, but nothing
// more is written. Status reports the cause; Options.OnDegraded is called
// once, at the transition. Reading indices that were only counted returns
// ErrNotWritten. Reopening the log retries the disk.
//
// # Concurrency
//
// A Log and its Iterators are not safe for concurrent use: one goroutine (the
// master's) owns the log. Appending while an Iterator is open is allowed on
// that goroutine; the Iterator sees the new records and follows rotations.
package eventlog
