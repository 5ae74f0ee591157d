package placement

// Running is one rank a node already runs, as the planner charges it.
type Running struct {
	Node    string
	ModelID string // the instance's model, whatever its card
	// Model is the model the rank was admitted with, in its cache type;
	// nil when its card is gone from the catalog (or changed under it).
	Model   *Model
	Rank    Rank
	Context int // the stamped context window
}

// Charged returns a copy of nodes with each running rank counted into its
// node's Runners (and Models) and charged into CommittedBytes, at the estimate the
// planner admitted it with (Charge at its stamped window). A rank whose
// model is unknown, or no longer fits its own estimate, still leaves a
// runner process: it is charged RunnerOverheadBytes. Ranks on nodes not in
// nodes are ignored; sums saturate, never wrap into room.
func Charged(nodes []Node, running []Running) []Node {
	out := make([]Node, len(nodes))
	at := make(map[string]int, len(nodes))
	for i, n := range nodes {
		out[i] = n
		if n.Models != nil {
			out[i].Models = copyCounts(n.Models) // never the caller's map
		}
		at[n.ID] = i
	}
	for _, r := range running {
		i, ok := at[r.Node]
		if !ok {
			continue
		}
		bytes := int64(RunnerOverheadBytes)
		if r.Model != nil {
			if b, err := Charge(*r.Model, r.Rank, r.Context); err == nil {
				bytes = b
			}
		}
		out[i].Runners++
		out[i].CommittedBytes = addSat(out[i].CommittedBytes, bytes)
		if r.ModelID != "" {
			if out[i].Models == nil {
				out[i].Models = map[string]int{}
			}
			out[i].Models[r.ModelID]++
		}
	}
	return out
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}
