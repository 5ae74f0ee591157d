//go:build linux

package telemetry

import (
	"os"
	"strconv"
	"strings"
)

// ResidentBytes reads a process's resident memory from /proc/PID/statm (its
// second field, in pages); false when pid runs no process.
func ResidentBytes(pid int) (int64, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
