package placement

import (
	"errors"
	"fmt"
	"strings"
)

// Every refusal the planner returns satisfies Refusal. HTTPStatus is 400 for
// a request that can never succeed as asked, 503 for a condition that may
// clear (memory freed, nodes joining, telemetry arriving), and 409 for an
// instance limit the cluster has reached: it clears only when an operator
// stops an instance or raises the limit, so retrying unchanged cannot help.
type Refusal interface {
	error
	HTTPStatus() int
}

// HTTP statuses, spelled out: net/http would pull the network into a pure
// package.
const (
	statusBadRequest  = 400
	statusConflict    = 409
	statusInternal    = 500
	statusUnavailable = 503
)

// Status maps err to its HTTP status: the refusal's own status, or 500 for an
// error the planner did not produce.
func Status(err error) int {
	if r, ok := errors.AsType[Refusal](err); ok {
		return r.HTTPStatus()
	}
	return statusInternal
}

// InvalidRequestError is a request (or a card) that no cluster could satisfy.
type InvalidRequestError struct {
	Field  string // e.g. "context_tokens", "model.layers"
	Reason string
}

func (e *InvalidRequestError) Error() string {
	return fmt.Sprintf("placement: invalid %s: %s", e.Field, e.Reason)
}
func (e *InvalidRequestError) HTTPStatus() int { return statusBadRequest }

// TopologyGapError means the cluster has too few usable nodes: none at all,
// or fewer than the request's minimum width.
type TopologyGapError struct {
	Model      string
	MinNodes   int
	Candidates int // nodes that could take part
}

func (e *TopologyGapError) Error() string {
	if e.Candidates == 0 {
		return fmt.Sprintf("placement: no node can take model %q; start a node or wait for it to join", e.Model)
	}
	return fmt.Sprintf("placement: model %q needs at least %d nodes but only %d can take it; start more nodes or lower min_nodes",
		e.Model, e.MinNodes, e.Candidates)
}
func (e *TopologyGapError) HTTPStatus() int { return statusUnavailable }

// AllCandidatesExcludedError means the request's own exclusions removed every
// node; no cluster change helps, the request has to exclude fewer.
type AllCandidatesExcludedError struct {
	Model    string
	Excluded []string
}

func (e *AllCandidatesExcludedError) Error() string {
	return fmt.Sprintf("placement: excluded_nodes [%s] removes every node for model %q; exclude fewer nodes",
		strings.Join(e.Excluded, ", "), e.Model)
}
func (e *AllCandidatesExcludedError) HTTPStatus() int { return statusBadRequest }

// NoCompatibleBackendError means no usable node offers a backend the card
// allows.
type NoCompatibleBackendError struct {
	Model      string
	Compatible []string // what the card allows
	Offered    []string // what the usable nodes offer
}

func (e *NoCompatibleBackendError) Error() string {
	return fmt.Sprintf("placement: no node offers a backend model %q runs on (card allows [%s], nodes offer [%s]); start a node with one of the allowed backends",
		e.Model, strings.Join(e.Compatible, ", "), strings.Join(e.Offered, ", "))
}
func (e *NoCompatibleBackendError) HTTPStatus() int { return statusUnavailable }

// InfoPendingError is the start-up case, not a failure: placement did not
// succeed without the nodes whose readings have not arrived, and may succeed
// once they do. Cause is what the planner found without them.
type InfoPendingError struct {
	Model string
	Nodes []string
	Cause error
}

func (e *InfoPendingError) Error() string {
	return fmt.Sprintf("placement: readings from [%s] are still pending, so model %q cannot be placed yet; retry in a few seconds (without them: %v)",
		strings.Join(e.Nodes, ", "), e.Model, e.Cause)
}
func (e *InfoPendingError) HTTPStatus() int { return statusUnavailable }
func (e *InfoPendingError) Unwrap() error   { return e.Cause }

// MemoryShortfallError is a placement attempt some node could not admit,
// with the arithmetic: the widest attempt the planner made, every rank's need
// (at the window charged) against its available memory.
type MemoryShortfallError struct {
	Model   string
	Backend string
	Window  int // tokens of KV charged on every node
	// Requested is the caller's explicit window, 0 when none was asked for.
	Requested int
	// Ceiling is the largest window every node could hold, 0 when some node
	// cannot hold even its weights.
	Ceiling int
	// MinWindow is the model's admission floor.
	MinWindow int
	Nodes     []Estimate
}

// Short returns the nodes whose need is not strictly below what they have.
func (e *MemoryShortfallError) Short() []Estimate {
	var out []Estimate
	for _, n := range e.Nodes {
		if !n.Fits() {
			out = append(out, n)
		}
	}
	return out
}

func (e *MemoryShortfallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "placement: model %q (%s) does not fit across %s", e.Model, e.Backend, count(len(e.Nodes), "node", "nodes"))
	if e.Requested > e.Ceiling && e.Ceiling >= e.MinWindow && e.Ceiling > 0 {
		fmt.Fprintf(&b, ": requested context %d exceeds the %d tokens every node can hold; request at most %d tokens, free memory or add nodes",
			e.Requested, e.Ceiling, e.Ceiling)
		return b.String()
	}
	committed := false
	for i, n := range e.Short() {
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%snode %s needs %s (weights %s + overhead %s + floor %s + KV %s for %d tokens) but has %s available",
			sep, n.Node, formatBytes(n.Total), formatBytes(n.Weights), formatBytes(n.Overhead),
			formatBytes(n.Floor), formatBytes(n.KV), e.Window, formatBytes(n.Available))
		if n.Runners > 0 {
			committed = true
			fmt.Fprintf(&b, " (the lesser of %s reported free and %s total − %s committed by %s)",
				formatBytes(n.Reported), formatBytes(n.Memory), formatBytes(n.Committed), count(n.Runners, "placed runner", "placed runners"))
		}
	}
	if committed {
		b.WriteString("; stop an instance on those nodes (`skulk ps` lists them, `skulk stop INSTANCE` ends one), add nodes, or place a smaller model")
		return b.String()
	}
	b.WriteString("; free memory on those nodes, add nodes, or place a smaller model")
	return b.String()
}
func (e *MemoryShortfallError) HTTPStatus() int { return statusUnavailable }

// FitError is the worker's pre-spawn check failing: the shard's estimate
// exceeds the node's live available memory by more than the tolerance.
type FitError struct {
	Node         string
	Need         int64
	AvailableNow int64
	Tolerance    int64
}

func (e *FitError) Error() string {
	return fmt.Sprintf("placement: node %s needs %s for its shard but has %s available now (tolerance %s); refusing so the master re-places it wider",
		e.Node, formatBytes(e.Need), formatBytes(e.AvailableNow), formatBytes(e.Tolerance))
}
func (e *FitError) HTTPStatus() int { return statusUnavailable }

// RefusalLimitError ends the refusal chain: the instance was already
// re-placed MaxRefusalHops times and must be torn down.
type RefusalLimitError struct {
	Model    string
	Refusing string
	Hops     int
}

func (e *RefusalLimitError) Error() string {
	return fmt.Sprintf("placement: node %s refused model %q after %d re-placements; giving up, free memory and place it again",
		e.Refusing, e.Model, e.Hops)
}
func (e *RefusalLimitError) HTTPStatus() int { return statusUnavailable }

// NodeLimit is a node that already holds as many runners as it allows.
type NodeLimit struct {
	Node    string `json:"node"`
	Runners int    `json:"runners"`
	Limit   int    `json:"limit"`
}

// NodeInstanceLimitError means nodes that could have taken a rank were left
// out because each already holds as many runners as its --max-instances
// allows, and the placement did not succeed without them.
type NodeInstanceLimitError struct {
	Model string
	Nodes []NodeLimit // sorted by id
	// Cause is what the planner found on the remaining nodes, nil when there
	// were none.
	Cause error
}

func (e *NodeInstanceLimitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "placement: model %q cannot be placed: ", e.Model)
	for i, n := range e.Nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "node %s holds %d runners of its limit %d", n.Node, n.Runners, n.Limit)
	}
	b.WriteString(" (--max-instances, SKULK_MAX_INSTANCES on that node); stop an instance there (`skulk ps` lists them, `skulk stop INSTANCE` ends one) or restart the node with a higher --max-instances")
	if e.Cause != nil {
		fmt.Fprintf(&b, " (on the other nodes: %v)", e.Cause)
	}
	return b.String()
}
func (e *NodeInstanceLimitError) HTTPStatus() int { return statusConflict }
func (e *NodeInstanceLimitError) Unwrap() error   { return e.Cause }

// ModelInstanceLimitError means the cluster already runs as many instances of
// the model as the master's --max-instances-per-model allows.
type ModelInstanceLimitError struct {
	Model     string
	Instances int
	Limit     int
}

func (e *ModelInstanceLimitError) Error() string {
	return fmt.Sprintf("placement: model %q already has %d instances, its limit of %d (--max-instances-per-model, SKULK_MAX_INSTANCES_PER_MODEL on the master node); stop one (`skulk ps` lists them, `skulk stop INSTANCE` ends one) or restart the master with a higher --max-instances-per-model",
		e.Model, e.Instances, e.Limit)
}
func (e *ModelInstanceLimitError) HTTPStatus() int { return statusConflict }

// count is "1 node" or "N nodes".
func count(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
