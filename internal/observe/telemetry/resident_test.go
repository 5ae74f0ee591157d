package telemetry

import (
	"os"
	"runtime"
	"testing"
)

// TestResidentBytes reads this process's resident memory, and nothing for
// pids that run no process.
func TestResidentBytes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("resident memory is read from /proc/PID/statm, on Linux only")
	}
	tests := []struct {
		name string
		pid  int
		ok   bool
	}{
		{"this process", os.Getpid(), true},
		{"no process yet", 0, false},
		{"negative", -1, false},
		{"a pid past the kernel's maximum", 1 << 30, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := ResidentBytes(tt.pid)
			if ok != tt.ok || ok && n <= 0 {
				t.Errorf("ResidentBytes(%d) = %d, %v; want ok=%v and a positive size", tt.pid, n, ok, tt.ok)
			}
		})
	}
}
