// Package vfs is the filesystem seam of the disk-backed packages (the event
// log): an FS interface with the few operations they need, OS, the
// implementation over the real filesystem, and MemFS, an in-memory
// implementation for crash testing.
//
// MemFS models what a real filesystem promises and no more: file data is
// durable only once the file is fsynced, and a directory entry (a created,
// renamed or removed name) is durable only once its directory is fsynced with
// SyncDir. Crash returns the durable view, so a test can append, crash,
// reopen and check that recovery kept everything that was promised. A write
// hook injects I/O errors such as ENOSPC after a number of bytes.
//
// OS is safe for concurrent use. MemFS is safe for concurrent use; its files
// are not (like *os.File, share one between goroutines only with care).
//
// Any package may import vfs; it imports only the standard library and
// golang.org/x/sys.
package vfs

import (
	"io"
	"io/fs"
)

// File is the subset of *os.File the log needs.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's data durable.
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
}

// FS is a filesystem. Names are slash- or OS-separated paths as accepted by
// the os package; MemFS treats relative and absolute names alike.
type FS interface {
	// Create creates or truncates name for reading and writing.
	Create(name string) (File, error)
	// Open opens name read-only.
	Open(name string) (File, error)
	// OpenFile is os.OpenFile: flag is a combination of os.O_* flags.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Rename atomically replaces newpath with oldpath.
	Rename(oldpath, newpath string) error
	Remove(name string) error
	// ReadDir lists a directory sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	MkdirAll(name string, perm fs.FileMode) error
	// SyncDir makes the directory's entries (creations, renames, removals)
	// durable.
	SyncDir(name string) error
	// FreeBytes reports the bytes available to an unprivileged writer on the
	// filesystem holding name.
	FreeBytes(name string) (uint64, error)
	// TotalBytes reports the size of the filesystem holding name.
	TotalBytes(name string) (uint64, error)
}
