package placement

import (
	"errors"
	"slices"
	"strconv"
	"testing"
)

const (
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// llama is a 32-layer model shaped like a small Llama: 200 MiB a layer,
// 250 MiB each for the embedding and the head, and 4 KiB of KV per token
// per layer (2 × 8 KV heads × 128 dims × 2 bytes).
func llama() Model {
	return Model{
		ID:                   "llama",
		Layers:               32,
		LayerBytes:           []int64{200 * MiB},
		EmbeddingBytes:       250 * MiB,
		HeadBytes:            250 * MiB,
		KVBytesPerTokenLayer: 2 * 8 * 128 * 2,
		ContextLength:        131072,
		CompatibleBackends:   []string{"native-cpu"},
	}
}

func cpu(id string, available int64) Node {
	return Node{ID: id, TotalBytes: available + 4*GiB, AvailableBytes: available, Backends: []string{"native-cpu"}}
}

// shift is how much smaller than a round figure some fixtures make a node, so
// that its room for layers and KV (what their worked arithmetic uses) is what
// it was when the runner overhead was 512 MiB.
const shift = 512*MiB - RunnerOverheadBytes

// need is the admission arithmetic written out independently of the code
// under test: weights plus 10% overhead plus the runner overhead plus KV.
func need(weights, kvPerTokenLayer int64, layers, window int) int64 {
	return weights + weights/10 + RunnerOverheadBytes + kvPerTokenLayer*int64(layers)*int64(window)
}

// asRefusal asserts err is a *T and returns it.
func asRefusal[T error](t *testing.T, err error) T {
	t.Helper()
	got, ok := errors.AsType[T](err)
	if !ok {
		var zero T
		t.Fatalf("error = %v (%T), want %T", err, err, zero)
	}
	return got
}

// checkInvariants asserts what every successful placement must satisfy.
func checkInvariants(t *testing.T, m Model, nodes []Node, req Request, p Placement) {
	t.Helper()
	byID := map[string]Node{}
	for _, n := range nodes {
		byID[n.ID] = n
	}
	if len(p.Ranks) == 0 || len(p.Ranks) != len(p.PerNode) {
		t.Fatalf("%d ranks, %d estimates", len(p.Ranks), len(p.PerNode))
	}
	if len(p.Ranks) < max(req.MinNodes, 1) {
		t.Errorf("%d ranks, fewer than min_nodes %d", len(p.Ranks), req.MinNodes)
	}
	next, seen := 0, map[string]bool{}
	for r, rank := range p.Ranks {
		n, ok := byID[rank.Node]
		switch {
		case !ok:
			t.Errorf("rank %d on unknown node %q", r, rank.Node)
		case n.Pending:
			t.Errorf("rank %d on pending node %q", r, rank.Node)
		case seen[rank.Node]:
			t.Errorf("node %q holds two ranks", rank.Node)
		case n.Runners >= n.maxInstances():
			t.Errorf("rank %d on %q, which already holds %d runners of its limit %d", r, rank.Node, n.Runners, n.maxInstances())
		}
		seen[rank.Node] = true
		for _, x := range req.Excluded {
			if x == rank.Node {
				t.Errorf("rank %d on excluded node %q", r, x)
			}
		}
		if !slices.Contains(n.Backends, p.Backend) || !slices.Contains(m.CompatibleBackends, p.Backend) {
			t.Errorf("rank %d: backend %q not offered by %q or not allowed by the card", r, p.Backend, rank.Node)
		}
		if rank.Start != next || rank.End <= rank.Start {
			t.Errorf("rank %d holds [%d, %d), want a non-empty range starting at %d", r, rank.Start, rank.End, next)
		}
		next = rank.End
		if rank.HoldsHead != (r == len(p.Ranks)-1) {
			t.Errorf("rank %d HoldsHead = %v", r, rank.HoldsHead)
		}
		// Only rank 0 embeds tokens; a tied head is charged the embedding
		// as its output matrix (rankWeights), but does not hold it for input.
		if want := r == 0; rank.HoldsEmbedding != want {
			t.Errorf("rank %d HoldsEmbedding = %v, want %v", r, rank.HoldsEmbedding, want)
		}
		e := p.PerNode[r]
		if e.Node != rank.Node || e.Available != n.headroom() {
			t.Errorf("estimate %d is for %q with %d available, rank is on %q with %d", r, e.Node, e.Available, rank.Node, n.headroom())
		}
		if c, err := Charge(m, rank, p.ContextWindow); err != nil || c != e.Total {
			t.Errorf("rank %d: Charge = %d, %v; Plan charged %d", r, c, err, e.Total)
		}
		if e.Total != e.Weights+e.Overhead+e.Floor+e.KV {
			t.Errorf("rank %d: total %d is not the sum of its parts", r, e.Total)
		}
		if e.Total >= e.Available {
			t.Errorf("rank %d on %s over-commits: needs %d, has %d", r, rank.Node, e.Total, e.Available)
		}
		if e.KV != m.KVBytesPerTokenLayer*int64(rank.End-rank.Start)*int64(p.ContextWindow) {
			t.Errorf("rank %d: KV %d not charged at the stamped window %d", r, e.KV, p.ContextWindow)
		}
	}
	if next != m.Layers {
		t.Errorf("ranks cover %d layers, model has %d", next, m.Layers)
	}
	floor := min(AdmissionFloor, m.ContextLength)
	if p.ContextWindow < floor || p.ContextWindow > m.ContextLength || p.ContextWindow > p.ContextCeiling {
		t.Errorf("window %d outside [floor %d, min(card %d, ceiling %d)]", p.ContextWindow, floor, m.ContextLength, p.ContextCeiling)
	}
	if req.Context > 0 && p.ContextWindow != req.Context {
		t.Errorf("window %d, request asked for exactly %d", p.ContextWindow, req.Context)
	}
}

// layout renders ranks compactly for comparison: "a[0,16)e b[16,32)h".
func layout(p Placement) string {
	s := ""
	for i, r := range p.Ranks {
		if i > 0 {
			s += " "
		}
		s += r.Node + "[" + strconv.Itoa(r.Start) + "," + strconv.Itoa(r.End) + ")"
		if r.HoldsEmbedding {
			s += "e"
		}
		if r.HoldsHead {
			s += "h"
		}
	}
	return s
}
