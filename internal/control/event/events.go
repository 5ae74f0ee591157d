package event

import (
	"fmt"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Event is a past-tense fact, ordered by the master into the log and applied
// by every node. The set is closed: only this package's types implement it.
type Event interface {
	Kind() Kind
	// Validate checks the event on its own, without State: ids well formed,
	// enums known, sizes bounded, a placement internally consistent.
	Validate() error
	isEvent()
}

// InstanceCreated places a model instance. It carries everything a worker
// needs to run its shard, stamped once by the master so every rank agrees
// (seed PLACE-16): the placement, the layer count and the context window.
type InstanceCreated struct {
	Instance      ids.InstanceID `json:"instance"`
	Model         ids.ModelID    `json:"model"`
	Backend       Backend        `json:"backend"`
	Placement     []Shard        `json:"placement"` // index = rank
	Layers        uint32         `json:"layers"`
	ContextTokens uint32         `json:"context_tokens"`
	// ExcludedNodes is the placement's exclusion hint, kept so repairs
	// honour it (seed PLACE-02).
	ExcludedNodes []ids.NodeID `json:"excluded_nodes"`
	// RefusalHops counts worker refusals that led to this placement; the
	// chain stops at two (seed WORK-08).
	RefusalHops uint8 `json:"refusal_hops"`
	// CreatedAtUnixMs is the master's clock reading, passed in as a value so
	// that apply never reads a clock.
	CreatedAtUnixMs int64 `json:"created_at_unix_ms"`
	// CacheType is the runners' KV cache element type, stamped at placement
	// from the request or the card ("": f16).
	CacheType string `json:"cache_type,omitempty"`
	// Speculative and DraftModel are the placement's speculative decoding
	// ("": the card's).
	Speculative string      `json:"speculative,omitempty"`
	DraftModel  ids.ModelID `json:"draft_model,omitempty"`
	// OnDemand and KeepAliveMs are the placement's (PlaceInstance): a
	// request placed the instance, and it unloads once idle that long.
	OnDemand    bool  `json:"on_demand,omitempty"`
	KeepAliveMs int64 `json:"keep_alive_ms,omitempty"`
}

// InstanceDeleted removes an instance and its runners (seed CTRL-15/16).
type InstanceDeleted struct {
	Instance ids.InstanceID `json:"instance"`
	Reason   DeleteReason   `json:"reason"`
}

// InstanceFailed records why an instance was given up, while its placement
// still exists; InstanceDeleted follows (seed CTRL-17).
type InstanceFailed struct {
	Instance ids.InstanceID  `json:"instance"`
	Category FailureCategory `json:"category"`
	Detail   string          `json:"detail"` // operator-safe; never prompts or output
	AtUnixMs int64           `json:"at_unix_ms"`
}

// RunnerStatusUpdated reports a runner's phase for one (instance, rank).
// A new RunnerID for the same rank means the worker replaced the runner.
type RunnerStatusUpdated struct {
	Runner   ids.RunnerID   `json:"runner"`
	Instance ids.InstanceID `json:"instance"`
	Rank     uint32         `json:"rank"`
	Node     ids.NodeID     `json:"node"`
	Status   RunnerStatus   `json:"status"`
	Reason   string         `json:"reason"`
}

// NodeJoined admits a member into the State's node set.
type NodeJoined struct {
	Node     ids.NodeID `json:"node"`
	AtUnixMs int64      `json:"at_unix_ms"`
}

// NodeLeft removes a member. The master first deletes every instance with a
// rank on it.
type NodeLeft struct {
	Node   ids.NodeID  `json:"node"`
	Reason LeaveReason `json:"reason"`
}

// DownloadPending starts or resets a model download on a node, clearing an
// older terminal outcome (seed CTRL-14). Progress itself is telemetry.
type DownloadPending struct {
	Node  ids.NodeID  `json:"node"`
	Model ids.ModelID `json:"model"`
}

// DownloadCompleted reports verified weights for a model on a node.
type DownloadCompleted struct {
	Node  ids.NodeID  `json:"node"`
	Model ids.ModelID `json:"model"`
	Bytes uint64      `json:"bytes"`
}

// DownloadFailed reports a terminal download failure on a node.
type DownloadFailed struct {
	Node   ids.NodeID  `json:"node"`
	Model  ids.ModelID `json:"model"`
	Reason string      `json:"reason"`
}

// TracingSet sets the cluster-wide tracing flag for new requests.
type TracingSet struct {
	Enabled bool `json:"enabled"`
}

// MasterElected opens a term: it is the first event a new master indexes,
// and the only event whose term may exceed the State's.
type MasterElected struct {
	Node ids.NodeID `json:"node"`
	Term ids.Term   `json:"term"`
}

func (InstanceCreated) Kind() Kind     { return KindInstanceCreated }
func (InstanceDeleted) Kind() Kind     { return KindInstanceDeleted }
func (InstanceFailed) Kind() Kind      { return KindInstanceFailed }
func (RunnerStatusUpdated) Kind() Kind { return KindRunnerStatusUpdated }
func (NodeJoined) Kind() Kind          { return KindNodeJoined }
func (NodeLeft) Kind() Kind            { return KindNodeLeft }
func (DownloadPending) Kind() Kind     { return KindDownloadPending }
func (DownloadCompleted) Kind() Kind   { return KindDownloadCompleted }
func (DownloadFailed) Kind() Kind      { return KindDownloadFailed }
func (TracingSet) Kind() Kind          { return KindTracingSet }
func (MasterElected) Kind() Kind       { return KindMasterElected }

func (InstanceCreated) isEvent()     {}
func (InstanceDeleted) isEvent()     {}
func (InstanceFailed) isEvent()      {}
func (RunnerStatusUpdated) isEvent() {}
func (NodeJoined) isEvent()          {}
func (NodeLeft) isEvent()            {}
func (DownloadPending) isEvent()     {}
func (DownloadCompleted) isEvent()   {}
func (DownloadFailed) isEvent()      {}
func (TracingSet) isEvent()          {}
func (MasterElected) isEvent()       {}

func (e InstanceCreated) Validate() error {
	return firstInvalid(e.Kind(),
		check{"instance", e.Instance.Validate()},
		check{"model", e.Model.Validate()},
		check{"backend", e.Backend.Validate()},
		check{"placement", validatePlacement(e.Kind(), e.Placement, e.Layers, e.ExcludedNodes)},
		check{"context_tokens", positive(e.ContextTokens, MaxContextTokens)},
		check{"refusal_hops", maxHops(e.RefusalHops)},
		check{"created_at_unix_ms", unixMs(e.CreatedAtUnixMs)},
	)
}

// MaxRefusalHops bounds the refusal chain (seed WORK-08).
const MaxRefusalHops = 2

func maxHops(h uint8) error {
	if h > MaxRefusalHops {
		return fmt.Errorf("%d hops, limit %d", h, MaxRefusalHops)
	}
	return nil
}

func (e InstanceDeleted) Validate() error {
	return firstInvalid(e.Kind(),
		check{"instance", e.Instance.Validate()},
		check{"reason", e.Reason.validate()},
	)
}

func (e InstanceFailed) Validate() error {
	return firstInvalid(e.Kind(),
		check{"instance", e.Instance.Validate()},
		check{"category", e.Category.validate()},
		check{"detail", reason(e.Detail)},
		check{"at_unix_ms", unixMs(e.AtUnixMs)},
	)
}

func (e RunnerStatusUpdated) Validate() error {
	return firstInvalid(e.Kind(),
		check{"runner", e.Runner.Validate()},
		check{"instance", e.Instance.Validate()},
		check{"rank", rank(e.Rank)},
		check{"node", e.Node.Validate()},
		check{"status", e.Status.validate()},
		check{"reason", reason(e.Reason)},
	)
}

func rank(r uint32) error {
	if r >= MaxRanks {
		return fmt.Errorf("rank %d, limit %d", r, MaxRanks-1)
	}
	return nil
}

func (e NodeJoined) Validate() error {
	return firstInvalid(e.Kind(),
		check{"node", e.Node.Validate()},
		check{"at_unix_ms", unixMs(e.AtUnixMs)},
	)
}

func (e NodeLeft) Validate() error {
	return firstInvalid(e.Kind(),
		check{"node", e.Node.Validate()},
		check{"reason", e.Reason.validate()},
	)
}

func (e DownloadPending) Validate() error {
	return firstInvalid(e.Kind(),
		check{"node", e.Node.Validate()},
		check{"model", e.Model.Validate()},
	)
}

func (e DownloadCompleted) Validate() error {
	return firstInvalid(e.Kind(),
		check{"node", e.Node.Validate()},
		check{"model", e.Model.Validate()},
	)
}

func (e DownloadFailed) Validate() error {
	return firstInvalid(e.Kind(),
		check{"node", e.Node.Validate()},
		check{"model", e.Model.Validate()},
		check{"reason", required(e.Reason)},
	)
}

func (e TracingSet) Validate() error { return nil }

func (e MasterElected) Validate() error {
	var termErr error
	if e.Term == 0 {
		termErr = fmt.Errorf("term 0 is before any election")
	}
	return firstInvalid(e.Kind(),
		check{"node", e.Node.Validate()},
		check{"term", termErr},
	)
}
