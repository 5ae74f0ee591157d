//go:build !linux

package telemetry

// loadAverage is not read on this platform yet.
func loadAverage() float64 { return 0 }
