//go:build linux

package testkit

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TmpFS mounts a tmpfs of size (as mount's size= option: "1m", "256k") on a
// fresh directory and returns it; the test's cleanup unmounts it before the
// directory is removed. A full disk is then real: writes fail with ENOSPC
// and statfs reports the space. It skips, saying why, when the test cannot
// mount (not root, or no mount namespace rights).
func TmpFS(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("mounting a tmpfs needs root (euid %d)", os.Geteuid())
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mount -t tmpfs -o size=%s: %v", size, err)
	}
	// Registered after TempDir's cleanup, so it runs first.
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
