package event

import (
	"fmt"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Command is an imperative request sent to the master, which decides whether
// and how to act; it is never applied to State directly. The set is closed.
type Command interface {
	Kind() Kind
	// CommandID is the command's identity; a command that creates an
	// instance lends it its id (ids.CommandID.Instance).
	CommandID() ids.CommandID
	Validate() error
	isCommand()
}

// PlaceInstance asks the master to plan and create an instance of Model.
// The planner picks nodes, shards, backend and context window.
type PlaceInstance struct {
	ID            ids.CommandID `json:"id"`
	Model         ids.ModelID   `json:"model"`
	MinNodes      uint32        `json:"min_nodes"`      // 0 or 1: prefer one node
	ExcludedNodes []ids.NodeID  `json:"excluded_nodes"` // per-placement hint (seed PLACE-02)
	ContextTokens uint32        `json:"context_tokens"` // 0: the served default
	// CacheType is the KV cache element type ("": the card's, else f16):
	// f16, f32, q8_0 or q4_0.
	CacheType string `json:"cache_type,omitempty"`
	// Speculative ("lookup") and DraftModel override the card's
	// speculative decoding settings.
	Speculative string      `json:"speculative,omitempty"`
	DraftModel  ids.ModelID `json:"draft_model,omitempty"`
	// OnDemand marks a placement a request caused (a generation for a
	// model without a ready instance) rather than an operator: the
	// instance is unloaded once idle for KeepAliveMs (0: right after its
	// requests; negative: never). An operator's placement never unloads.
	OnDemand    bool  `json:"on_demand,omitempty"`
	KeepAliveMs int64 `json:"keep_alive_ms,omitempty"`
}

// CreateInstance asks the master to create an instance with an explicit
// placement, which it still admits against memory before indexing.
type CreateInstance struct {
	ID            ids.CommandID `json:"id"`
	Model         ids.ModelID   `json:"model"`
	Backend       Backend       `json:"backend"`
	Placement     []Shard       `json:"placement"`
	Layers        uint32        `json:"layers"`
	ContextTokens uint32        `json:"context_tokens"`
	ExcludedNodes []ids.NodeID  `json:"excluded_nodes"`
}

// DeleteInstance asks the master to stop an instance; no failure history is
// kept (seed CTRL-16).
type DeleteInstance struct {
	ID       ids.CommandID  `json:"id"`
	Instance ids.InstanceID `json:"instance"`
}

// SetTracingEnabled asks the master to set the cluster tracing flag.
type SetTracingEnabled struct {
	ID      ids.CommandID `json:"id"`
	Enabled bool          `json:"enabled"`
}

// RefuseInstancePlacement is a worker's pre-spawn memory guard tripping: Node
// cannot fit its shard of Instance, so the master re-places one node wider
// or gives up (seed WORK-07/08). The byte figures explain the refusal.
type RefuseInstancePlacement struct {
	ID             ids.CommandID  `json:"id"`
	Instance       ids.InstanceID `json:"instance"`
	Node           ids.NodeID     `json:"node"`
	Reason         string         `json:"reason"`
	NeededBytes    uint64         `json:"needed_bytes"`
	AvailableBytes uint64         `json:"available_bytes"`
}

// FailInstance is a worker giving an instance up (crash loop, wedge,
// unresponsive spawn, model rejection); the master records the failure and
// deletes the instance (seed WORK-09, CTRL-17).
type FailInstance struct {
	ID       ids.CommandID   `json:"id"`
	Instance ids.InstanceID  `json:"instance"`
	Node     ids.NodeID      `json:"node"`
	Category FailureCategory `json:"category"`
	Detail   string          `json:"detail"`
}

func (PlaceInstance) Kind() Kind           { return KindPlaceInstance }
func (CreateInstance) Kind() Kind          { return KindCreateInstance }
func (DeleteInstance) Kind() Kind          { return KindDeleteInstance }
func (SetTracingEnabled) Kind() Kind       { return KindSetTracingEnabled }
func (RefuseInstancePlacement) Kind() Kind { return KindRefuseInstancePlacement }
func (FailInstance) Kind() Kind            { return KindFailInstance }

func (c PlaceInstance) CommandID() ids.CommandID           { return c.ID }
func (c CreateInstance) CommandID() ids.CommandID          { return c.ID }
func (c DeleteInstance) CommandID() ids.CommandID          { return c.ID }
func (c SetTracingEnabled) CommandID() ids.CommandID       { return c.ID }
func (c RefuseInstancePlacement) CommandID() ids.CommandID { return c.ID }
func (c FailInstance) CommandID() ids.CommandID            { return c.ID }

func (PlaceInstance) isCommand()           {}
func (CreateInstance) isCommand()          {}
func (DeleteInstance) isCommand()          {}
func (SetTracingEnabled) isCommand()       {}
func (RefuseInstancePlacement) isCommand() {}
func (FailInstance) isCommand()            {}

func (c PlaceInstance) Validate() error {
	var nodesErr, ctxErr error
	if c.MinNodes > MaxRanks {
		nodesErr = fmt.Errorf("%d nodes, limit %d", c.MinNodes, MaxRanks)
	}
	if c.ContextTokens > MaxContextTokens {
		ctxErr = fmt.Errorf("%d tokens, limit %d", c.ContextTokens, MaxContextTokens)
	}
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"model", c.Model.Validate()},
		check{"min_nodes", nodesErr},
		check{"excluded_nodes", validateNodeList(c.Kind(), "excluded_nodes", c.ExcludedNodes, MaxExcludedNodes)},
		check{"context_tokens", ctxErr},
	)
}

func (c CreateInstance) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"model", c.Model.Validate()},
		check{"backend", c.Backend.Validate()},
		check{"placement", validatePlacement(c.Kind(), c.Placement, c.Layers, c.ExcludedNodes)},
		check{"context_tokens", positive(c.ContextTokens, MaxContextTokens)},
	)
}

func (c DeleteInstance) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"instance", c.Instance.Validate()},
	)
}

func (c SetTracingEnabled) Validate() error {
	return firstInvalid(c.Kind(), check{"id", c.ID.Validate()})
}

func (c RefuseInstancePlacement) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"instance", c.Instance.Validate()},
		check{"node", c.Node.Validate()},
		check{"reason", required(c.Reason)},
	)
}

func (c FailInstance) Validate() error {
	return firstInvalid(c.Kind(),
		check{"id", c.ID.Validate()},
		check{"instance", c.Instance.Validate()},
		check{"node", c.Node.Validate()},
		check{"category", c.Category.validate()},
		check{"detail", reason(c.Detail)},
	)
}
