// Package diagnostics is what a node knows and tells of itself and of the
// cluster: its timeline of cluster events (timeline.go, behind Recorder),
// the cluster and node diagnostics documents (GET /v1/diagnostics/cluster
// and /node), the health GET /state overlays on the State, the members'
// telemetry for the dashboard, and the node's durability: its persistence
// reading, the event log's place in the home and the conversion of a home
// of the format before Raft.
//
// It reads the control plane, the membership's readings, the worker's
// flight recorders and the pipeline links' reports, so it sits at the
// serving layer; the node hands it those as Sources.
package diagnostics
