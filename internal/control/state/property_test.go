package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

// gen proposes plausible events for a State: mostly valid, some not, so both
// Apply's transitions and its rejections get exercised.
type gen struct {
	r *rand.Rand
	n int // counter for fresh ids
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func (g *gen) node(s State) ids.NodeID {
	if known := s.NodeIDs(); len(known) > 0 && g.r.IntN(10) < 8 {
		return pick(g.r, known)
	}
	return ids.NodeID(fmt.Sprintf("n%d", g.r.IntN(6)))
}

func (g *gen) instance(s State) ids.InstanceID {
	if known := sortedKeys(s.Instances); len(known) > 0 && g.r.IntN(10) < 9 {
		return pick(g.r, known)
	}
	return "i-missing"
}

func (g *gen) model() ids.ModelID { return pick(g.r, []ids.ModelID{"org/a", "org/b", "c:1b"}) }

func (g *gen) fresh(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

func (g *gen) event(s State) event.Event {
	r := g.r
	switch r.IntN(12) {
	case 0:
		if r.IntN(4) == 0 {
			return event.MasterElected{Node: g.node(s), Term: s.Term + 1}
		}
		return event.TracingSet{Enabled: r.IntN(2) == 0}
	case 1:
		return event.NodeJoined{Node: g.node(s), AtUnixMs: r.Int64N(1e12)}
	case 2:
		return event.NodeLeft{Node: g.node(s), Reason: pick(r, []event.LeaveReason{event.LeaveGraceful, event.LeaveTimedOut})}
	case 3:
		switch r.IntN(3) {
		case 0:
			return event.DownloadPending{Node: g.node(s), Model: g.model()}
		case 1:
			return event.DownloadCompleted{Node: g.node(s), Model: g.model(), Bytes: r.Uint64N(1 << 40)}
		default:
			if r.IntN(3) == 0 {
				keys := make([]event.APIKey, r.IntN(3))
				for i := range keys {
					keys[i] = event.APIKey{Name: fmt.Sprint("k", i), Scope: pick(r, []string{event.ScopeAdmin, event.ScopeInference}),
						Digest: fmt.Sprintf("%064x", r.Uint64())}
				}
				return event.APIKeysSet{Node: g.node(s), Keys: keys}
			}
			switch r.IntN(6) {
			case 0:
				return event.ModelAdded{Card: card(g.model(), 1+int64(r.IntN(2)))}
			case 1:
				return event.ModelRemoved{Model: g.model()}
			case 2:
				return event.APIKeyAdded{Key: event.APIKey{Name: pick(r, []string{"ops", "ci", "bot"}),
					Scope: pick(r, []string{event.ScopeAdmin, event.ScopeInference}), Digest: fmt.Sprintf("%064x", r.Uint64N(3))},
					Node: g.node(s), AtUnixMs: r.Int64N(1e12)}
			case 3:
				return event.APIKeyRemoved{Name: pick(r, []string{"ops", "ci", "bot"})}
			}
			return event.DownloadFailed{Node: g.node(s), Model: g.model(), Reason: "disk full"}
		}
	case 4, 5:
		return g.instanceCreated(s)
	case 6:
		return event.InstanceDeleted{Instance: g.instance(s), Reason: pick(r, []event.DeleteReason{event.DeleteOperator, event.DeleteFailed, event.DeleteNodeLost})}
	case 7:
		return event.InstanceFailed{Instance: g.instance(s), Category: event.FailureCrashLoop, Detail: "gave up", AtUnixMs: r.Int64N(1e12)}
	case 8, 9, 10:
		return g.runner(s)
	default:
		// A task event of an old log, which changes nothing.
		return event.RetiredTask{Retired: pick(r, event.RetiredKinds()), Body: []byte{0xa0}}
	}
}

func (g *gen) instanceCreated(s State) event.Event {
	known := s.NodeIDs()
	ranks := 1 + g.r.IntN(3)
	if len(known) < ranks {
		return event.TracingSet{Enabled: true}
	}
	perm := g.r.Perm(len(known))[:ranks]
	layers := uint32(ranks + g.r.IntN(20))
	shards := make([]event.Shard, ranks)
	start := uint32(0)
	for i, p := range perm {
		end := start + 1 + uint32(g.r.IntN(int(layers-start)-(ranks-i-1)))
		if i == ranks-1 {
			end = layers
		}
		shards[i] = event.Shard{Node: known[p], LayerStart: start, LayerEnd: end, HoldsEmbedding: i == 0, HoldsHead: i == ranks-1}
		start = end
	}
	return event.InstanceCreated{Instance: ids.InstanceID(g.fresh("i")), Model: g.model(), Backend: "native-cpu",
		Placement: shards, Layers: layers, ContextTokens: 1 + uint32(g.r.IntN(32768)),
		RefusalHops: uint8(g.r.IntN(3)), CreatedAtUnixMs: g.r.Int64N(1e12)}
}

func (g *gen) runner(s State) event.Event {
	inst := g.instance(s)
	placement := s.Instances[inst].Placement
	rank, node := uint32(0), g.node(s)
	if len(placement) > 0 {
		rank = uint32(g.r.IntN(len(placement)))
		if g.r.IntN(10) < 9 {
			node = placement[rank].Node
		}
	}
	status := event.RunnerReady
	if g.r.IntN(2) == 0 {
		status = pick(g.r, []event.RunnerStatus{event.RunnerPending, event.RunnerDownloading, event.RunnerLoading,
			event.RunnerWarming, event.RunnerRunning, event.RunnerFailed, event.RunnerStopped})
	}
	return event.RunnerStatusUpdated{Runner: ids.RunnerID(fmt.Sprintf("r%d", g.r.IntN(3))), Instance: inst,
		Rank: rank, Node: node, Status: status}
}

// history runs the generator and returns the accepted log and every State
// along the way (states[i] is the State after log[:i]).
func history(t *testing.T, seed uint64, steps int) ([]event.IndexedEvent, []State) {
	t.Helper()
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s := replay(t, State{}, event.MasterElected{Node: "n0", Term: 1})
	log := []event.IndexedEvent{{Term: 1, Index: 1, Event: event.MasterElected{Node: "n0", Term: 1}}}
	states := []State{{}, s}
	hashes := [][32]byte{Hash(State{}), Hash(s)}
	for range steps {
		ie := next(s, g.event(s))
		before, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Apply(s, ie)
		after, _ := Encode(s)
		if !bytes.Equal(before, after) {
			t.Fatalf("seed %d: Apply(%s) mutated its input (err=%v)", seed, ie.Event.Kind(), err)
		}
		if err != nil {
			continue
		}
		if err := Check(out); err != nil {
			t.Fatalf("seed %d: after %s at %d the State breaks an invariant: %v", seed, ie.Event.Kind(), ie.Index, err)
		}
		s = out
		log = append(log, ie)
		states = append(states, s)
		hashes = append(hashes, Hash(s))
	}
	// Copy-on-write: no later Apply may have reached into an earlier State
	// through a shared map or slice.
	for i, st := range states {
		if Hash(st) != hashes[i] {
			t.Fatalf("seed %d: State after %d events changed later", seed, i)
		}
	}
	return log, states
}

func TestReplayDeterministic(t *testing.T) {
	kinds := map[event.Kind]int{}
	for seed := uint64(1); seed <= 12; seed++ {
		log, states := history(t, seed, 400)
		final, _ := Encode(states[len(states)-1])
		for _, ie := range log {
			kinds[ie.Event.Kind()]++
		}

		// Replayed twice from the empty State.
		for round := range 2 {
			s := State{}
			for _, ie := range log {
				var err error
				if s, err = Apply(s, ie); err != nil {
					t.Fatalf("seed %d round %d: %v", seed, round, err)
				}
			}
			if got, _ := Encode(s); !bytes.Equal(got, final) {
				t.Fatalf("seed %d round %d: replay differs", seed, round)
			}
		}

		// Replayed through the wire codec, as followers receive it.
		s := State{}
		for _, ie := range log {
			b, err := event.EncodeIndexed(ie)
			if err != nil {
				t.Fatal(err)
			}
			wire, err := event.DecodeIndexed(b)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if s, err = Apply(s, wire); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		if got, _ := Encode(s); !bytes.Equal(got, final) {
			t.Fatalf("seed %d: replay through the codec differs", seed)
		}

		// Snapshot at several points, then the tail.
		for cut := 0; cut < len(states); cut += 1 + len(states)/8 {
			b, err := Encode(states[cut])
			if err != nil {
				t.Fatal(err)
			}
			snap, err := Decode(b)
			if err != nil {
				t.Fatalf("seed %d: snapshot at %d: %v", seed, cut, err)
			}
			if Hash(snap) != Hash(states[cut]) {
				t.Fatalf("seed %d: snapshot at %d does not round-trip", seed, cut)
			}
			for _, ie := range log[cut:] {
				if snap, err = Apply(snap, ie); err != nil {
					t.Fatalf("seed %d: tail after snapshot %d: %v", seed, cut, err)
				}
			}
			if got, _ := Encode(snap); !bytes.Equal(got, final) {
				t.Fatalf("seed %d: snapshot at %d + tail differs from full replay", seed, cut)
			}
		}
	}
	// The generator must reach every kind, or the property says little.
	for _, k := range event.EventKinds() {
		if kinds[k] == 0 {
			t.Errorf("no accepted %s in any generated history", k)
		}
	}
	t.Logf("accepted events by kind: %v", kinds)
}
