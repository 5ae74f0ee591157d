//go:build !linux && !darwin

package telemetry

import "errors"

// ReadMemory is not implemented on this platform.
func ReadMemory() (Memory, error) {
	return Memory{}, errors.New("telemetry: reading memory is supported on Linux and macOS")
}
