package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"syscall"
)

// IsNoSpace reports whether err says a disk is full: ENOSPC, or a quota
// exhausted (EDQUOT, where the platform has it). Writers name the disk and
// what needed the space when it is (NoSpace).
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || isQuota(err)
}

// NoSpaceError is a write that ran out of disk space, named: a path on the
// disk, the bytes still free there, and what needed them. An API call that
// caused it is answered 507 Insufficient Storage.
type NoSpaceError struct {
	Path string // a path on the full disk
	Free uint64 // bytes free when the write failed (as statfs read them just after)
	What string // what needed the space, e.g. "importing model x (2 GB)"
	Err  error
}

func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("disk full: %s needs space on the disk of %s, which has %d bytes free; free disk space there and retry (%v)",
		e.What, e.Path, e.Free, e.Err)
}

func (e *NoSpaceError) Unwrap() error { return e.Err }

// HTTPStatus is 507 Insufficient Storage.
func (e *NoSpaceError) HTTPStatus() int { return http.StatusInsufficientStorage }

// NoSpace returns err as a *NoSpaceError when it says the disk holding path
// is full, naming what needed the space; any other error (nil included),
// or one already named, is returned as it is.
func NoSpace(err error, path, what string) error {
	if err == nil || !IsNoSpace(err) {
		return err
	}
	if _, ok := errors.AsType[*NoSpaceError](err); ok {
		return err
	}
	free, _ := freeNear(path)
	return &NoSpaceError{Path: path, Free: free, What: what, Err: err}
}

// freeNear is the free space of the disk holding path or, when path does
// not exist (a write that failed to create it), its nearest parent.
func freeNear(path string) (uint64, error) {
	for {
		free, err := freeBytes(path)
		parent := filepath.Dir(path)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || parent == path {
			return free, err
		}
		path = parent
	}
}
