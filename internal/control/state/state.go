package state

import (
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// MaxFailures bounds the failure history (seed CTRL-17).
const MaxFailures = 64

// State is the replicated control-plane view at LastIndex. The zero value is
// the empty State before the first event.
type State struct {
	Term      ids.Term                    `json:"term"`
	LastIndex ids.Index                   `json:"last_index"`
	Master    ids.NodeID                  `json:"master"` // elected in Term; empty before the first election
	Tracing   bool                        `json:"tracing"`
	Nodes     map[ids.NodeID]Node         `json:"nodes"`
	Instances map[ids.InstanceID]Instance `json:"instances"`
	// Failures is the instance failure history, oldest first, at most
	// MaxFailures long, one record per instance.
	Failures []Failure `json:"failures"`
	// APIKeys holds each node's configured API keys as digests; every node
	// enforces the union. Omitted when empty, so States from before keys
	// existed hash the same.
	APIKeys map[ids.NodeID][]event.APIKey `json:"api_keys,omitempty"`
	// Models is the cluster's catalog of cards added or imported on any
	// node (ModelAdded); which nodes hold a model's bytes is each node's
	// Downloads. Omitted when empty, so States from before replicated
	// cards hash the same.
	Models map[ids.ModelID]event.ModelCard `json:"models,omitempty"`
	// AddedKeys are the API keys added at run time (skulk keys add), by
	// name, as digests; every node enforces them beside APIKeys. Omitted
	// when empty, so States from before run-time keys hash the same.
	AddedKeys map[string]event.AddedAPIKey `json:"added_keys,omitempty"`
}

// Node is a cluster member as the log knows it. Liveness and resources are
// telemetry and live elsewhere.
type Node struct {
	JoinedAtUnixMs int64                    `json:"joined_at_unix_ms"`
	Downloads      map[ids.ModelID]Download `json:"downloads"`
}

// DownloadStatus is the durable state of a model's weights on a node.
type DownloadStatus string

const (
	DownloadPending   DownloadStatus = "pending"
	DownloadCompleted DownloadStatus = "completed"
	DownloadFailed    DownloadStatus = "failed"
)

// Download is the last ordered download decision or outcome for a model on
// a node. Progress is telemetry and never appears here.
type Download struct {
	Status DownloadStatus `json:"status"`
	Bytes  uint64         `json:"bytes"`
	Reason string         `json:"reason"`
}

// InstanceStatus summarises an instance's runners.
type InstanceStatus string

const (
	// InstancePending: not every rank is serving (starting, or a runner is
	// being replaced).
	InstancePending InstanceStatus = "pending"
	// InstanceReady: every rank's runner is ready or running.
	InstanceReady InstanceStatus = "ready"
	// InstanceFailed: given up (InstanceFailed); deletion follows.
	InstanceFailed InstanceStatus = "failed"
)

// Instance is a placed model with its stamped parameters and its runners.
type Instance struct {
	Model           ids.ModelID    `json:"model"`
	Backend         event.Backend  `json:"backend"`
	Placement       []event.Shard  `json:"placement"` // index = rank
	Layers          uint32         `json:"layers"`
	ContextTokens   uint32         `json:"context_tokens"`
	ExcludedNodes   []ids.NodeID   `json:"excluded_nodes"`
	RefusalHops     uint8          `json:"refusal_hops"`
	CreatedAtUnixMs int64          `json:"created_at_unix_ms"`
	CreatedIndex    ids.Index      `json:"created_index"`
	Status          InstanceStatus `json:"status"`
	Runners         []Runner       `json:"runners"`               // index = rank, same length as Placement
	CacheType       string         `json:"cache_type,omitempty"`  // the KV cache element type ("": f16)
	Speculative     string         `json:"speculative,omitempty"` // the placement's speculative mode ("": the card's)
	DraftModel      ids.ModelID    `json:"draft_model,omitempty"` // the placement's draft model ("": the card's)
	// OnDemand: a request placed the instance; it unloads once idle for
	// KeepAliveMs (0: right after its requests; negative: never).
	OnDemand    bool  `json:"on_demand,omitempty"`
	KeepAliveMs int64 `json:"keep_alive_ms,omitempty"`
}

// Runner is the latest reported runner for one (instance, rank). ID is
// empty until the first report.
type Runner struct {
	ID     ids.RunnerID       `json:"id"`
	Status event.RunnerStatus `json:"status"`
	Reason string             `json:"reason"`
}

// Failure records why an instance was given up, kept after the instance is
// deleted so operators can see why a model vanished.
type Failure struct {
	Instance ids.InstanceID        `json:"instance"`
	Model    ids.ModelID           `json:"model"`
	Category event.FailureCategory `json:"category"`
	Detail   string                `json:"detail"`
	Nodes    []ids.NodeID          `json:"nodes"` // placement nodes by rank
	AtUnixMs int64                 `json:"at_unix_ms"`
	Index    ids.Index             `json:"index"`
}
