package placement

import (
	"cmp"
	"slices"
)

// Placement is a planned instance: which node holds which layers, the one
// backend every rank runs, and the context window every rank serves.
type Placement struct {
	Model   string
	Backend string
	Ranks   []Rank // in pipeline order
	// ContextWindow is computed once here and stamped on the instance, so
	// every rank serves the same window instead of each deciding its own.
	ContextWindow int
	// ContextCeiling is the largest window every chosen node could hold,
	// capped by the card.
	ContextCeiling int
	PerNode        []Estimate // one per rank, same order
	// Request is the effective request (exclusions included), stamped so
	// repairs carry it forward.
	Request Request
}

// Rank is one pipeline stage: layers [Start, End) on Node.
type Rank struct {
	Node           string `json:"node"`
	Start          int    `json:"start"`
	End            int    `json:"end"`
	HoldsEmbedding bool   `json:"holds_embedding"`
	HoldsHead      bool   `json:"holds_head"`
}

// Plan places m on nodes as req asks: on one node when it fits one (the
// one with the fewest replicas of m, then the fewest runners per core, then
// the most room: spread), otherwise on the fewest nodes that fit (most
// available memory first, ties by id), with each node admitted on its own
// memory. Backends are tried in
// preference order at each width, so a narrower placement on a less
// preferred backend beats a wider one on a preferred backend. The answer
// depends only on the values given, not on the order of nodes.
func Plan(m Model, nodes []Node, req Request) (Placement, error) {
	s, req, nodes, err := check(m, nodes, req)
	if err != nil {
		return Placement{}, err
	}
	return search(s, req, nodes, req.MinNodes, s.Layers)
}

// AdmitModel bounds one model's instances across the cluster: instances is
// how many the State already holds, limit the master's
// --max-instances-per-model (0 means DefaultMaxInstancesPerModel). A node's
// own limit only bounds that node; this keeps one model from taking every
// node's share.
func AdmitModel(model string, instances, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxInstancesPerModel
	}
	if instances >= limit {
		return &ModelInstanceLimitError{Model: model, Instances: instances, Limit: limit}
	}
	return nil
}

func check(m Model, nodes []Node, req Request) (shape, Request, []Node, error) {
	s, err := checkModel(m)
	if err != nil {
		return shape{}, Request{}, nil, err
	}
	if req, err = checkRequest(s, req); err != nil {
		return shape{}, Request{}, nil, err
	}
	if nodes, err = checkNodes(nodes); err != nil {
		return shape{}, Request{}, nil, err
	}
	return s, req, nodes, nil
}

// search plans on between minWidth and maxWidth nodes, narrowest first.
// nodes are sorted by id.
func search(s shape, req Request, nodes []Node, minWidth, maxWidth int) (Placement, error) {
	var candidates []Node
	var pending []string
	var full []NodeLimit
	excluded := 0
	for _, n := range nodes {
		incompatible := len(n.Backends) > 0 && !slices.ContainsFunc(n.Backends, func(b string) bool { return slices.Contains(s.CompatibleBackends, b) })
		switch {
		case slices.Contains(req.Excluded, n.ID):
			excluded++
		case n.Pending && incompatible:
			// Its backends are already known and none can run the model,
			// so its memory reading cannot change the answer.
		case n.Runners >= n.maxInstances() && !incompatible:
			full = append(full, NodeLimit{Node: n.ID, Runners: n.Runners, Limit: n.maxInstances()})
		case n.Pending:
			pending = append(pending, n.ID)
		default:
			candidates = append(candidates, n)
		}
	}
	switch {
	case len(nodes) == 0:
		return Placement{}, &TopologyGapError{Model: s.ID, MinNodes: minWidth}
	case excluded == len(nodes):
		return Placement{}, &AllCandidatesExcludedError{Model: s.ID, Excluded: slices.Clone(req.Excluded)}
	}
	p, err := widths(s, req, candidates, minWidth, maxWidth)
	if err != nil && len(full) > 0 {
		limit := &NodeInstanceLimitError{Model: s.ID, Nodes: full}
		if len(candidates) > 0 {
			limit.Cause = err
		}
		err = limit
	}
	if err != nil && len(pending) > 0 {
		return Placement{}, &InfoPendingError{Model: s.ID, Nodes: pending, Cause: err}
	}
	return p, err
}

// widths tries each width from narrowest to widest and, at each, each
// backend in preference order. When nothing fits it returns the arithmetic
// of the widest attempt, the one closest to fitting.
func widths(s shape, req Request, candidates []Node, minWidth, maxWidth int) (Placement, error) {
	order := backendOrder(s, req.PreferredBackend)
	offering := make([][]Node, len(order))
	most := 0
	for i, b := range order {
		for _, n := range candidates {
			if slices.Contains(n.Backends, b) {
				offering[i] = append(offering[i], n)
			}
		}
		// Largest first, so the first w are the w roomiest nodes.
		slices.SortStableFunc(offering[i], func(a, b Node) int { return cmp.Compare(b.headroom(), a.headroom()) })
		most = max(most, len(offering[i]))
	}
	if most == 0 {
		return Placement{}, &NoCompatibleBackendError{Model: s.ID, Compatible: slices.Clone(s.CompatibleBackends), Offered: offered(candidates)}
	}
	var widest *MemoryShortfallError
	for w := minWidth; w <= min(maxWidth, most); w++ {
		if w == 1 {
			// A whole instance goes to the least busy node it fits:
			// replicas of one model spread, runners share cores.
			for i, b := range order {
				if len(offering[i]) == 0 {
					continue
				}
				for _, n := range spread(s.ID, offering[i]) {
					if p, short := attempt(s, req, []Node{n}, b); short == nil {
						return p, nil
					}
				}
				if widest == nil { // the roomiest node's arithmetic: the closest to fitting
					_, widest = attempt(s, req, offering[i][:1], b)
				}
			}
			continue
		}
		for i, b := range order {
			if len(offering[i]) < w {
				continue
			}
			chosen := slices.SortedFunc(slices.Values(offering[i][:w]), func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
			p, short := attempt(s, req, chosen, b)
			if short == nil {
				return p, nil
			}
			if widest == nil || len(short.Nodes) > len(widest.Nodes) {
				widest = short
			}
		}
	}
	if widest == nil {
		return Placement{}, &TopologyGapError{Model: s.ID, MinNodes: minWidth, Candidates: most}
	}
	return Placement{}, widest
}

func offered(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Backends...)
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// cut turns split's bounds into ranks on nodes, with each rank's weights
// and KV bytes per token, and the largest window every node holds.
func cut(s shape, nodes []Node, bounds []int) ([]Rank, []int64, []int64, int64) {
	w := len(nodes)
	ranks := make([]Rank, w)
	weights := make([]int64, w)
	kvPerToken := make([]int64, w)
	ceiling := int64(s.ContextLength)
	for r, n := range nodes {
		start, end := bounds[r], bounds[r+1]
		ranks[r] = Rank{Node: n.ID, Start: start, End: end, HoldsEmbedding: r == 0, HoldsHead: r == w-1}
		// The same sum Charge makes, so what is admitted now is what is
		// committed later.
		weights[r] = rankWeights(s, ranks[r])
		kvPerToken[r] = mulSat(s.KVBytesPerTokenLayer, int64(end-start))
		ceiling = min(ceiling, tokenCeiling(n.headroom(), fixedBytes(weights[r]), kvPerToken[r]))
	}
	return ranks, weights, kvPerToken, ceiling
}

// attempt places the model on exactly these nodes, in this order, with one
// backend, and admits each node on its own memory.
func attempt(s shape, req Request, nodes []Node, backend string) (Placement, *MemoryShortfallError) {
	w := len(nodes)
	// What each rank holds besides its layers.
	extra := make([]int64, w)
	extra[0] = s.EmbeddingBytes
	extra[w-1] = addSat(extra[w-1], s.HeadBytes)
	if s.TiedEmbedding && w > 1 {
		extra[w-1] = addSat(extra[w-1], s.EmbeddingBytes)
	}
	capacity := make([]int64, w)
	for r, n := range nodes {
		capacity[r] = n.headroom() - fixedBytes(extra[r])
	}
	// The last rank reads the output head every token: work the split
	// counts (with a tied embedding, the head is the embedding matrix), so
	// that no stage waits on the last. Unless that costs the window a
	// memory-balanced cut would give (tight memory): then memory decides.
	head := s.HeadBytes
	if s.TiedEmbedding {
		head = addSat(head, s.EmbeddingBytes)
	}
	want := int64(req.Context)
	if want == 0 {
		want = DefaultContext
	}
	// Shares of the work follow each node's size (its room before what
	// it holds besides layers, which the head's work already counts).
	size := make([]int64, w)
	for r, n := range nodes {
		size[r] = n.headroom()
	}
	ranks, weights, kvPerToken, ceiling := cut(s, nodes, split(s.cum, size, head))
	if r, wt, kv, c := cut(s, nodes, split(s.cum, capacity, 0)); ceiling < min(c, want) {
		ranks, weights, kvPerToken, ceiling = r, wt, kv, c
	}
	if s.KVBytesPerTokenLayer == 0 {
		// Without KV geometry the fit is uncomputable; commit only the floor
		// rather than a window that would fail at load.
		ceiling = min(ceiling, int64(s.floor()))
	}
	ceiling = max(ceiling, 0)

	window := req.Context
	if window == 0 {
		// Below the floor this charges the floor, and admission refuses it.
		window = max(min(DefaultContext, int(ceiling)), s.floor())
	}
	per := make([]Estimate, w)
	fits := true
	for r, n := range nodes {
		per[r] = estimate(n, weights[r], kvPerToken[r], window)
		fits = fits && per[r].Fits()
	}
	if !fits {
		return Placement{}, &MemoryShortfallError{
			Model: s.ID, Backend: backend, Window: window, Requested: req.Context,
			Ceiling: int(ceiling), MinWindow: s.floor(), Nodes: per,
		}
	}
	return Placement{
		Model: s.ID, Backend: backend, Ranks: ranks,
		ContextWindow: window, ContextCeiling: int(ceiling),
		PerNode: per, Request: req,
	}, nil
}

// spread orders nodes for a whole instance of model: fewest replicas of it
// first, then fewest runners per core, then the roomiest, then by id. The
// memory-first order alone put every replica on the node that read the
// most free memory; on equal machines that reading is noise.
func spread(model string, nodes []Node) []Node {
	out := slices.Clone(nodes)
	slices.SortStableFunc(out, func(a, b Node) int {
		if c := cmp.Compare(a.Models[model], b.Models[model]); c != 0 {
			return c
		}
		// a.Runners/a.cores vs b.Runners/b.cores, without division.
		if c := cmp.Compare(a.Runners*max(b.Cores, 1), b.Runners*max(a.Cores, 1)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.headroom(), a.headroom()); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}
