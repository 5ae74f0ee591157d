//go:build unix

package hub

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// freeBytes is the space an unprivileged user may still write on the file
// system holding dir (or its nearest existing parent).
func freeBytes(dir string) (int64, error) {
	for {
		var st unix.Statfs_t
		err := unix.Statfs(dir, &st)
		if err == nil {
			return int64(st.Bavail) * int64(st.Bsize), nil
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return 0, &os.PathError{Op: "statfs", Path: dir, Err: err}
		}
		dir = parent
	}
}
