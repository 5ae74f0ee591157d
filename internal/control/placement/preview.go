package placement

// Preview is what a placement of one width would use, for GET
// /instance/previews: the operator sees the memory a window reserves before
// launching.
type Preview struct {
	Width   int        `json:"width"`
	Backend string     `json:"backend"`
	Ranks   []Rank     `json:"ranks"`
	PerNode []Estimate `json:"per_node"` // at DefaultContext
	// MemoryBytes is the sum of every node's need at DefaultContext.
	MemoryBytes int64 `json:"memory_bytes"`
	// ContextCeiling is the largest window this placement could serve.
	ContextCeiling int `json:"context_ceiling"`
	// DefaultContext is the window a placement that names none would serve.
	DefaultContext int `json:"default_context"`
	// KVBytesPerToken is the whole model's KV cost per token of window.
	KVBytesPerToken int64 `json:"kv_bytes_per_token"`
}

// Previews returns, for each width from one node upwards that can host m
// on the nodes whose readings have arrived, the placement Plan would make
// at exactly that width with no exclusions and the default window. Widths
// that do not fit are left out; an invalid model or node list is an error.
func Previews(m Model, nodes []Node) ([]Preview, error) {
	s, req, nodes, err := check(m, nodes, Request{})
	if err != nil {
		return nil, err
	}
	var out []Preview
	for w := 1; w <= min(len(nodes), s.Layers); w++ {
		p, err := search(s, req, nodes, w, w)
		if err != nil {
			continue
		}
		pv := Preview{
			Width: w, Backend: p.Backend, Ranks: p.Ranks, PerNode: p.PerNode,
			ContextCeiling: p.ContextCeiling, DefaultContext: p.ContextWindow,
			KVBytesPerToken: mulSat(s.KVBytesPerTokenLayer, int64(s.Layers)),
		}
		for _, e := range p.PerNode {
			pv.MemoryBytes = addSat(pv.MemoryBytes, e.Total)
		}
		out = append(out, pv)
	}
	return out, nil
}
