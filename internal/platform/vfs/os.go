package vfs

import (
	"fmt"
	"io/fs"
	"os"
)

// OS is the FS of the operating system.
type OS struct{}

var _ FS = OS{}

// Create implements FS.
func (OS) Create(name string) (File, error) { return os.Create(name) }

// Open implements FS.
func (OS) Open(name string) (File, error) { return os.Open(name) }

// OpenFile implements FS.
func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// Rename implements FS.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// ReadDir implements FS.
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// Stat implements FS.
func (OS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// MkdirAll implements FS.
func (OS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }

// SyncDir implements FS by fsyncing the directory itself, which is what makes
// a rename or a new file's name survive a power loss on Linux.
func (OS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("vfs: sync dir %s: %w", name, serr)
	}
	return cerr
}

// FreeBytes implements FS with statfs(2).
func (OS) FreeBytes(name string) (uint64, error) { return freeBytes(name) }

// TotalBytes implements FS with statfs(2).
func (OS) TotalBytes(name string) (uint64, error) { return totalBytes(name) }
