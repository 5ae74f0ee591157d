package telemetry

import "runtime"

// CPU is a reading of the node's processors.
type CPU struct {
	Cores int     `json:"cores"` // logical CPUs
	Load1 float64 `json:"load1"` // one-minute load average (0 when unknown)
}

// ReadCPU reads the processor count and the load average.
func ReadCPU() CPU {
	return CPU{Cores: runtime.NumCPU(), Load1: loadAverage()}
}
