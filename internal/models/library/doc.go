// Package library is a node's models at run time: its catalog (the
// store's cards, rebuilt when they change on disk, with the cluster's
// replicated cards behind them), its downloads from the Hub (progress
// gossiped as "dl/" readings, outcomes reported to the master), and the
// weights a placed stage needs: local, fetched from a member that has the
// model (internal/models/tensorfetch), or downloaded. It also serves this
// node's verified copies to members that fetch from it.
//
// modeladmin administers the catalog behind the HTTP API; Library is its
// Downloads and its catalog. The worker's runner types are not known
// here: the node turns Weights into what a runner loads.
package library
