package placement

import (
	"cmp"
	"fmt"
	"slices"
)

// Model is what the planner needs to know about one model: its shape in
// bytes and the backends its card allows.
type Model struct {
	ID     string
	Layers int
	// LayerBytes holds each layer's weight bytes; a single entry applies to
	// every layer.
	LayerBytes []int64
	// EmbeddingBytes is the token embedding, held by the first rank.
	EmbeddingBytes int64
	// HeadBytes is the output norm and output matrix, held by the last rank.
	// With TiedEmbedding the output matrix is the embedding tensor, so
	// HeadBytes is just the norm and the last rank holds the embedding too.
	HeadBytes     int64
	TiedEmbedding bool
	// KVBytesPerTokenLayer is 2 × n_kv_heads × head_dim × bytes per element.
	// Zero means the card lacks KV geometry: the window cannot be sized from
	// memory and is clamped to the admission floor.
	KVBytesPerTokenLayer int64
	// ContextLength is the card's maximum context.
	ContextLength int
	// CompatibleBackends is a hard filter: a node must offer one of them.
	CompatibleBackends []string
	// BackendPreference is a soft order among the compatible backends.
	BackendPreference []string
}

// Node is one member's placement-relevant telemetry.
type Node struct {
	ID string `json:"id"`
	// Name is what people call the node (its --name or host name), for
	// them only: the planner goes by ID.
	Name           string   `json:"name,omitempty"`
	TotalBytes     int64    `json:"total_bytes"`
	AvailableBytes int64    `json:"available_bytes"`
	Backends       []string `json:"backends"` // e.g. "native-cpu"
	// Pending marks a node whose readings have not arrived yet; the planner
	// places without it and, if that fails, says the answer may change.
	Pending bool `json:"pending"`
	// MaxInstances bounds the runners placed on the node (the node's
	// --max-instances); 0 means DefaultMaxInstances.
	MaxInstances int `json:"max_instances,omitempty"`
	// Runners and CommittedBytes are what the State already places on the
	// node: how many runners, and the sum of their Charge. They come from
	// the State, not telemetry, so a runner counts from the moment it is
	// placed, before its process allocates anything.
	Runners        int   `json:"runners,omitempty"`
	CommittedBytes int64 `json:"committed_bytes,omitempty"`
	// Cores is the node's logical CPU count (0: unknown): its runners
	// share them, so a whole instance goes where runners per core are
	// fewest.
	Cores int `json:"cores,omitempty"`
	// Models counts the node's runners by model (from the State, with
	// Runners): replicas of one model spread over nodes.
	Models map[string]int `json:"-"`
}

// maxInstances is the node's runner limit with the default applied.
func (n Node) maxInstances() int {
	if n.MaxInstances > 0 {
		return n.MaxInstances
	}
	return DefaultMaxInstances
}

// headroom is the memory a new placement may use on n: the lesser of the
// telemetry's free reading and the memory no placed runner is charged for.
// Telemetry alone lags (a runner placed a moment ago has not allocated yet),
// and the State alone misses what runs outside Skulk. A node that reports no
// total has its runners charged against the free reading instead, which may
// count a runner twice but never admits one too many.
func (n Node) headroom() int64 {
	if n.TotalBytes == 0 {
		return max(n.AvailableBytes-n.CommittedBytes, 0)
	}
	return max(min(n.AvailableBytes, n.TotalBytes-n.CommittedBytes), 0)
}

// Request is what a caller asks for.
type Request struct {
	Model    string // when set, must name the Model being placed
	MinNodes int    // 0 means 1
	// Context is the window to serve exactly; 0 means the served default,
	// bounded by memory and the card.
	Context int
	// Excluded nodes are treated as absent for this placement; the set is
	// stamped on the placement so repairs keep honouring it.
	Excluded         []string
	PreferredBackend string // moves one compatible backend to the front
	Sharding         string // "" or ShardingPipeline
}

// shape is a validated model with its per-layer weights expanded.
type shape struct {
	Model
	layer []int64 // weight bytes of each layer
	cum   []int64 // cum[i] = bytes of layers [0, i), saturating
}

func checkModel(m Model) (shape, error) {
	bad := func(field, format string, args ...any) (shape, error) {
		return shape{}, &InvalidRequestError{Field: "model." + field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case m.ID == "":
		return bad("id", "the model has no id")
	case m.Layers < 1 || m.Layers > MaxLayers:
		return bad("layers", "%d layers; a model has between 1 and %d", m.Layers, MaxLayers)
	case len(m.LayerBytes) != 1 && len(m.LayerBytes) != m.Layers:
		return bad("layer_bytes", "%d entries for %d layers; give one per layer or one for all", len(m.LayerBytes), m.Layers)
	case m.EmbeddingBytes < 0 || m.HeadBytes < 0 || m.KVBytesPerTokenLayer < 0:
		return bad("bytes", "negative tensor size in the card")
	case m.ContextLength < 1:
		return bad("context_length", "the card states no context length")
	case len(m.CompatibleBackends) == 0:
		return bad("compatible_backends", "the card lists no backend that can run it")
	}
	s := shape{Model: m, layer: make([]int64, m.Layers), cum: make([]int64, m.Layers+1)}
	for i := range s.layer {
		b := m.LayerBytes[0]
		if len(m.LayerBytes) > 1 {
			b = m.LayerBytes[i]
		}
		if b < 0 {
			return bad("layer_bytes", "layer %d has negative size %d", i, b)
		}
		s.layer[i] = b
		s.cum[i+1] = addSat(s.cum[i], b)
	}
	return s, nil
}

// floor is the smallest window this model may serve.
func (s shape) floor() int { return min(AdmissionFloor, s.ContextLength) }

// checkRequest validates r against the model and returns it normalized:
// MinNodes at least 1, exclusions sorted without duplicates.
func checkRequest(s shape, r Request) (Request, error) {
	bad := func(field, format string, args ...any) (Request, error) {
		return Request{}, &InvalidRequestError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.Model != "" && r.Model != s.ID:
		return bad("model", "the request names %q but the card is %q", r.Model, s.ID)
	case r.Sharding != "" && r.Sharding != ShardingPipeline:
		return bad("sharding", "%q is not supported; use %q", r.Sharding, ShardingPipeline)
	case r.MinNodes < 0:
		return bad("min_nodes", "%d is negative", r.MinNodes)
	case r.MinNodes > s.Layers:
		return bad("min_nodes", "%d nodes cannot each hold a layer of a %d-layer model; ask for at most %d", r.MinNodes, s.Layers, s.Layers)
	case r.Context < 0:
		return bad("context_tokens", "%d is negative; use 0 for the default", r.Context)
	case r.Context > s.ContextLength:
		return bad("context_tokens", "%d exceeds the card's context length %d", r.Context, s.ContextLength)
	case r.Context > 0 && r.Context < s.floor():
		return bad("context_tokens", "%d is below the admission floor %d; ask for at least %d or 0 for the default", r.Context, s.floor(), s.floor())
	case r.Context > s.floor() && s.KVBytesPerTokenLayer == 0:
		return bad("context_tokens", "the card has no KV geometry, so only the floor of %d tokens can be admitted; omit context_tokens", s.floor())
	case r.PreferredBackend != "" && !slices.Contains(s.CompatibleBackends, r.PreferredBackend):
		return bad("backend", "%q is not among the card's compatible backends %v", r.PreferredBackend, s.CompatibleBackends)
	}
	r.MinNodes = max(r.MinNodes, 1)
	r.Excluded = slices.Compact(slices.Sorted(slices.Values(r.Excluded)))
	if r.Sharding == "" {
		r.Sharding = ShardingPipeline
	}
	return r, nil
}

// checkNodes validates the node list and returns a copy sorted by id, so
// the caller's order can never change the answer.
func checkNodes(nodes []Node) ([]Node, error) {
	out := slices.Clone(nodes)
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.ID, b.ID) })
	for i, n := range out {
		field := fmt.Sprintf("nodes[%q]", n.ID)
		switch {
		case n.ID == "":
			return nil, &InvalidRequestError{Field: "nodes", Reason: "a node has no id"}
		case i > 0 && out[i-1].ID == n.ID:
			return nil, &InvalidRequestError{Field: field, Reason: "the node is listed twice"}
		case n.AvailableBytes < 0 || n.TotalBytes < 0:
			return nil, &InvalidRequestError{Field: field, Reason: "negative memory reading"}
		case n.CommittedBytes < 0 || n.Runners < 0 || n.MaxInstances < 0:
			return nil, &InvalidRequestError{Field: field, Reason: "negative runner count, commitment or limit"}
		}
	}
	return out, nil
}

// backendOrder is the order to try backends in: the request's preferred
// one, then the card's preference list, then the rest of the compatible
// set by name. Only compatible backends appear, each once.
func backendOrder(s shape, preferred string) []string {
	var order []string
	add := func(b string) {
		if slices.Contains(s.CompatibleBackends, b) && !slices.Contains(order, b) {
			order = append(order, b)
		}
	}
	add(preferred)
	for _, b := range s.BackendPreference {
		add(b)
	}
	for _, b := range slices.Sorted(slices.Values(s.CompatibleBackends)) {
		add(b)
	}
	return order
}
