// Package telemetry reads this node's resources (memory, processor count,
// load, a process's resident memory) and tracks how fresh each gossiped
// reading is (Freshness); the membership carries the readings between
// nodes, and readings.go encodes and publishes the resources and
// round-trip readings. Readings are observations, never events.
package telemetry

// Memory is a reading of the node's RAM.
type Memory struct {
	TotalBytes     int64 `json:"total_bytes"`
	AvailableBytes int64 `json:"available_bytes"`
}
