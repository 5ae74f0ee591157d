//go:build linux || darwin || freebsd

package vfs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func freeBytes(name string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(name, &st); err != nil {
		return 0, fmt.Errorf("vfs: statfs %s: %w", name, err)
	}
	// Bavail, not Bfree: blocks reserved for root are not ours to fill.
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}

func totalBytes(name string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(name, &st); err != nil {
		return 0, fmt.Errorf("vfs: statfs %s: %w", name, err)
	}
	return uint64(st.Blocks) * uint64(st.Bsize), nil
}
