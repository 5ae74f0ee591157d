package placement

import (
	"fmt"
	"slices"
)

// Widen answers a worker's RefuseInstancePlacement: the node refusing could
// not load its shard of prev, and hops re-placements of this instance have
// already happened. The instance is re-placed one node wider (so each node
// holds a smaller share) without the refusing node; when no wider placement
// exists it falls back once to a single node without it. After
// MaxRefusalHops re-placements the answer is a *RefusalLimitError: tear the
// instance down, which bounds the chain so it cannot oscillate.
//
// The refusing node joins the stamped exclusions, so a later repair of the
// same instance cannot walk back into the same refusal. When neither the
// wider nor the single-node placement fits, the wider attempt's refusal is
// returned.
func Widen(m Model, nodes []Node, prev Placement, refusing string, hops int) (Placement, error) {
	switch {
	case hops < 0:
		return Placement{}, &InvalidRequestError{Field: "hops", Reason: fmt.Sprintf("%d is negative", hops)}
	case !slices.ContainsFunc(prev.Ranks, func(r Rank) bool { return r.Node == refusing }):
		return Placement{}, &InvalidRequestError{Field: "refusing_node", Reason: fmt.Sprintf("node %q holds no rank of this placement; the refusal is stale", refusing)}
	case hops >= MaxRefusalHops:
		return Placement{}, &RefusalLimitError{Model: prev.Model, Refusing: refusing, Hops: hops}
	}
	req := prev.Request
	req.Excluded = append(slices.Clone(req.Excluded), refusing)

	wider := req
	wider.MinNodes = len(prev.Ranks) + 1
	p, err := Plan(m, nodes, wider)
	if err == nil {
		return p, nil
	}
	single := req
	single.MinNodes = 1
	s, single, sorted, serr := check(m, nodes, single)
	if serr != nil {
		return Placement{}, err
	}
	if p, serr := search(s, single, sorted, 1, 1); serr == nil {
		return p, nil
	}
	return Placement{}, err
}
