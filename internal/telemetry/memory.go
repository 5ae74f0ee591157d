// Package telemetry reads this node's resources (memory now; CPU,
// accelerators and gossip of readings come with the cluster). Readings are
// observations, never events.
package telemetry

// Memory is a reading of the node's RAM.
type Memory struct {
	TotalBytes     int64 `json:"total_bytes"`
	AvailableBytes int64 `json:"available_bytes"`
}
