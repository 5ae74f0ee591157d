//go:build !linux

package telemetry

// ResidentBytes is not implemented on this platform: false for every pid.
func ResidentBytes(pid int) (int64, bool) { return 0, false }
