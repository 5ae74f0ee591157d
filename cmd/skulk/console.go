package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// inviteFileName is where a node whose output is not a terminal keeps the
// invite line of the cluster it started, in its home.
const inviteFileName = "cluster-invite.txt"

// nodeConsole is where the node writes what the operator must see but no
// log may hold (the invite line of a new cluster, which carries the key):
// the terminal when stdout is one; otherwise a 0600 file in the home, and
// the log gets only the file's path. Output that is not a terminal (a
// service manager's journal, a file, a pipe) is a log in all but name.
func nodeConsole(out io.Writer, home string, log *slog.Logger) io.Writer {
	if isTTY(out) {
		return out
	}
	return &inviteFile{path: filepath.Join(home, inviteFileName), log: log}
}

// isTTY reports whether w is a terminal: a character device that answers
// the terminal ioctl (/dev/null is a character device but no terminal).
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// inviteFile writes each message to its file, replacing what it held, and
// logs where it is.
type inviteFile struct {
	path string
	log  *slog.Logger
}

func (f *inviteFile) Write(p []byte) (int, error) {
	if err := writePrivate(f.path, p); err != nil {
		// The key stays out of the log even then: `skulk cluster invite`
		// prints it on demand.
		f.log.Warn("the invite line of the new cluster could not be written; `skulk cluster invite` prints it", "path", f.path, "err", err)
		return 0, err
	}
	f.log.Info("this node started a new cluster; its invite line (it carries the cluster key) is in a file only you can read, and `skulk cluster invite` prints it again", "path", f.path)
	return len(p), nil
}

// writePrivate writes b to path with mode 0600, through a fresh file so
// that an older file's wider mode is not kept.
func writePrivate(path string, b []byte) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	fd, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = fd.Write(b)
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
