// Package placement is the planner: given a model, the cluster's nodes and a
// placement request, it chooses the nodes, gives each a contiguous layer
// range, sizes the context window once for every rank, and admits each node
// on its own memory, or refuses with a typed error that says why and what to
// do about it.
//
// Admission is per node, never summed across nodes. A node holding layers
// [Start, End) must fit
//
//	weights + weights×(OverheadFactor−1) + RunnerOverheadBytes + KV(End−Start layers, window)
//
// (RunnerNeed, with KV per token and layer from KVBytesPerTokenLayer). That
// one estimate is also what the previews show, what Charge commits, what the
// worker checks before spawning and what GET /models/requirements reports.
//
// strictly below its available memory: an exact fit thrashes instead of
// running, so it is refused. The first rank also holds the token embedding,
// the last the output head (and, when the head is tied to the embedding, the
// embedding tensor as well).
//
// A node's available memory is the lesser of its telemetry's free reading and
// its total less the Charge of every runner already placed on it: telemetry
// lags behind placement, so a burst of placements would otherwise each see
// the same free memory. Memory alone does not bound a tiny model, so a node
// also takes at most its MaxInstances runners, and AdmitModel bounds one
// model's instances across the cluster.
//
// The package is a pure core: it takes values and returns values, keeps no
// state between calls and imports no os, net, time, sync, log or math/rand
// (a test enforces it), so the API's dry run, the master and a repair all
// reach the same verdict from the same inputs. Its functions are safe to call
// from any goroutine. Callers convert their State, catalog card and telemetry
// into Model, Node and Request; this package imports nothing of the project.
package placement
