//go:build linux

package dataplane

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// childEnv selects a child role when the test binary re-executes itself, so
// cross-process tests run real code in a real second process.
const childEnv = "DATAPLANE_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

// runChild dispatches a child role; fds 3.. are the ExtraFiles in order.
func runChild(role string) int {
	var err error
	switch role {
	case "ring-consumer":
		err = childRingConsumer()
	case "object-worker":
		err = childObjectWorker()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// spawnChild starts the test binary as role with files at fds 3.., and
// registers a cleanup that kills it if the test did not wait for it.
func spawnChild(t testing.TB, role string, env []string, files ...*os.File) *exec.Cmd {
	t.Helper()
	return spawnChildOut(t, role, nil, env, files...)
}

// spawnChildOut is spawnChild with the child's stdout captured in out.
func spawnChildOut(t testing.TB, role string, out io.Writer, env []string, files ...*os.File) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	cmd.Stdout = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

func encodeLayout(l RingLayout) string {
	return fmt.Sprintf("%d,%d,%d,%d,%d,%d,%d", l.RingID, l.ArenaOffset, l.TotalLen,
		l.HeaderOffset, l.DataOffset, l.DataCapacity, l.Alignment)
}

func decodeLayout(s string) (RingLayout, error) {
	f := strings.Split(s, ",")
	if len(f) != 7 {
		return RingLayout{}, fmt.Errorf("layout %q: want 7 fields", s)
	}
	var v [7]uint64
	for i := range f {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return RingLayout{}, fmt.Errorf("layout %q: %w", s, err)
		}
		v[i] = n
	}
	return RingLayout{RingID(v[0]), v[1], v[2], v[3], v[4], v[5], uint32(v[6])}, nil
}

func envUint(name string) (uint64, error) {
	return strconv.ParseUint(os.Getenv(name), 10, 64)
}
