//go:build linux

package dataplane

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// osThreads is this process's OS thread count (/proc/self/status).
func osThreads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// TestDoorbellWaitParks checks that a waiting goroutine parks in the
// netpoller instead of holding an OS thread in read(2): 64 concurrent Waits
// add far fewer than 64 threads, also after each bell's fd went to a child
// through exec.Cmd.ExtraFiles (whose Fd call must not have made the shared
// eventfd blocking). Each Wait then returns on its Ring.
func TestDoorbellWaitParks(t *testing.T) {
	const n = 64
	bells := make([]*Doorbell, n)
	files := make([]*os.File, n)
	for i := range bells {
		var err error
		if bells[i], err = NewDoorbell(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bells[i].Close() })
		if files[i], err = bells[i].File(); err != nil {
			t.Fatal(err)
		}
	}
	child := exec.Command("/bin/sh", "-c", "exit 0")
	child.ExtraFiles = files
	if err := child.Run(); err != nil {
		t.Fatalf("child with the bells' fds: %v", err)
	}
	for _, f := range files {
		f.Close()
	}

	before := osThreads(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, b := range bells {
		wg.Go(func() { errs <- b.Wait(ctx) })
	}
	time.Sleep(200 * time.Millisecond) // let every Wait reach its read
	during := osThreads(t)
	for _, b := range bells {
		if err := b.Ring(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	}
	if grew := during - before; grew >= n/2 {
		t.Errorf("%d waiting goroutines added %d OS threads (%d → %d): Waits hold threads", n, grew, before, during)
	}
}
