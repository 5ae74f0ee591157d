package homedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// InUseError refuses a second process on a home a running node holds:
// two processes on one home would write one log and claim one node id.
type InUseError struct {
	Home string
	PID  int
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("home %s is in use by skulk (pid %d); stop that node first, or give this one another --home", e.Home, e.PID)
}

// Lock takes the home's lock file for this process: an exclusive
// flock, which the kernel drops when the holder dies, so a lock a dead
// process left is taken over; the file names the holder's pid for the
// refusal. It returns the release.
func Lock(home string) (func(), error) {
	p := filepath.Join(home, "lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("node: open the home's lock %s: %w", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := os.ReadFile(p)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &InUseError{Home: home, PID: pid}
		}
		return nil, fmt.Errorf("node: lock the home %s: %w", home, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { unix.Flock(int(f.Fd()), unix.LOCK_UN); f.Close() }, nil
}
