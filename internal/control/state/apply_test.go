package state

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

func TestApplyRejects(t *testing.T) {
	tests := []struct {
		name string
		prep []event.Event // applied to the base State first
		ie   func(s State) event.IndexedEvent
		want error
	}{
		{"index_gap", nil, func(s State) event.IndexedEvent {
			ie := next(s, event.TracingSet{Enabled: true})
			ie.Index++
			return ie
		}, ErrOutOfOrder},
		{"index_repeat", nil, func(s State) event.IndexedEvent {
			ie := next(s, event.TracingSet{Enabled: true})
			ie.Index--
			return ie
		}, ErrOutOfOrder},
		// A deposed master of term 1 writes after term 2 began.
		{"stale_term", []event.Event{event.MasterElected{Node: "b", Term: 2}}, func(s State) event.IndexedEvent {
			ie := next(s, event.TracingSet{})
			ie.Term = 1
			return ie
		}, ErrStaleTerm},
		{"unannounced_term", nil, func(s State) event.IndexedEvent {
			ie := next(s, event.TracingSet{})
			ie.Term++
			return ie
		}, ErrTermMismatch},
		{"election_same_term", nil, func(s State) event.IndexedEvent { return next(s, event.MasterElected{Node: "b", Term: 1}) }, ErrStaleTerm},
		{"election_term_mismatch", nil, func(s State) event.IndexedEvent {
			ie := next(s, event.MasterElected{Node: "b", Term: 3})
			ie.Term = 2
			return ie
		}, ErrTermMismatch},
		{"invalid_event", nil, func(s State) event.IndexedEvent { return next(s, event.NodeJoined{Node: ""}) }, event.ErrInvalid},
		{"nil_event", nil, func(s State) event.IndexedEvent { return event.IndexedEvent{Term: 1, Index: s.LastIndex + 1} }, event.ErrInvalid},
		{"node_left_unknown", nil, func(s State) event.IndexedEvent {
			return next(s, event.NodeLeft{Node: "z", Reason: event.LeaveGraceful})
		}, ErrUnknownNode},
		{"node_left_holding_rank", nil, func(s State) event.IndexedEvent {
			return next(s, event.NodeLeft{Node: "b", Reason: event.LeaveTimedOut})
		}, ErrBusy},
		{"download_unknown_node", nil, func(s State) event.IndexedEvent {
			return next(s, event.DownloadCompleted{Node: "z", Model: "m"})
		}, ErrUnknownNode},
		{"instance_exists", nil, func(s State) event.IndexedEvent { return next(s, twoRank("i1", "m", "a", "c")) }, ErrExists},
		{"instance_unknown_node", nil, func(s State) event.IndexedEvent { return next(s, twoRank("i2", "m", "a", "z")) }, ErrUnknownNode},
		{"delete_unknown", nil, func(s State) event.IndexedEvent {
			return next(s, event.InstanceDeleted{Instance: "i9", Reason: event.DeleteOperator})
		}, ErrUnknownInstance},
		{"fail_unknown", nil, func(s State) event.IndexedEvent {
			return next(s, event.InstanceFailed{Instance: "i9", Category: event.FailureWedged})
		}, ErrUnknownInstance},
		{"runner_unknown_instance", nil, func(s State) event.IndexedEvent { return next(s, ready("i9", 0, "a")) }, ErrUnknownInstance},
		{"runner_rank_out_of_range", nil, func(s State) event.IndexedEvent { return next(s, ready("i1", 2, "a")) }, ErrConflict},
		{"runner_wrong_node", nil, func(s State) event.IndexedEvent { return next(s, ready("i1", 0, "b")) }, ErrConflict},
		{"model_other_card", []event.Event{event.ModelAdded{Card: card("x", 1)}}, func(s State) event.IndexedEvent {
			return next(s, event.ModelAdded{Card: card("x", 2)})
		}, ErrExists},
		{"model_remove_unknown", nil, func(s State) event.IndexedEvent { return next(s, event.ModelRemoved{Model: "x"}) }, ErrUnknownModel},
		// Instance i1 of the base State serves model m.
		{"model_remove_in_use", []event.Event{event.ModelAdded{Card: card("m", 8)}}, func(s State) event.IndexedEvent {
			return next(s, event.ModelRemoved{Model: "m"})
		}, ErrBusy},
		{"model_invalid_card", nil, func(s State) event.IndexedEvent {
			return next(s, event.ModelAdded{Card: event.ModelCard{ID: "x", Layers: 1}})
		}, event.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := replay(t, base(t), tt.prep...)
			before, _ := Encode(s)
			got, err := Apply(s, tt.ie(s))
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			var ae *ApplyError
			if !errors.As(err, &ae) {
				t.Fatalf("got %T, want *ApplyError", err)
			}
			after, _ := Encode(s)
			returned, _ := Encode(got)
			if !bytes.Equal(before, after) || !bytes.Equal(before, returned) {
				t.Fatal("a rejected event changed the State")
			}
		})
	}
}

func TestApplyTransitions(t *testing.T) {
	tests := []struct {
		name  string
		evs   []event.Event
		check func(t *testing.T, s State)
	}{
		{"ready_after_all_ranks", nil, func(t *testing.T, s State) {
			if s.Instances["i1"].Status != InstanceReady || s.Master != "a" || s.Term != 1 || s.LastIndex != 8 {
				t.Fatalf("got %+v", s.Instances["i1"])
			}
		}},
		{"pending_until_every_rank", []event.Event{twoRank("i2", "m", "b", "c"), ready("i2", 0, "b")}, func(t *testing.T, s State) {
			if st := s.Instances["i2"].Status; st != InstancePending {
				t.Fatalf("status %s, want pending", st)
			}
		}},
		{"runner_crash_makes_pending", []event.Event{event.RunnerStatusUpdated{Runner: "r-i1-b", Instance: "i1", Rank: 1, Node: "b", Status: event.RunnerFailed, Reason: "exit 2"}},
			func(t *testing.T, s State) {
				if st := s.Instances["i1"].Status; st != InstancePending {
					t.Fatalf("status %s, want pending", st)
				}
				if r := s.Instances["i1"].Runners[1]; r.Reason != "exit 2" || r.Status != event.RunnerFailed {
					t.Fatalf("runner %+v", r)
				}
			}},
		{"running_counts_as_serving", []event.Event{event.RunnerStatusUpdated{Runner: "r-i1-a", Instance: "i1", Rank: 0, Node: "a", Status: event.RunnerRunning}},
			func(t *testing.T, s State) {
				if st := s.Instances["i1"].Status; st != InstanceReady {
					t.Fatalf("status %s, want ready", st)
				}
			}},
		{"retired_tasks_change_nothing", []event.Event{
			retired(event.KindTaskAcknowledged), retired(event.KindTaskCancelled), retired(event.KindTaskFinished),
		}, func(t *testing.T, s State) {
			b := base(t)
			s.LastIndex = b.LastIndex
			if Hash(s) != Hash(b) {
				t.Fatalf("an old log's task events changed the State: %+v", s)
			}
		}},
		{"delete_then_leave", []event.Event{
			event.InstanceDeleted{Instance: "i1", Reason: event.DeleteOperator},
			event.NodeLeft{Node: "b", Reason: event.LeaveTimedOut},
		}, func(t *testing.T, s State) {
			if len(s.Instances) != 0 || len(s.Nodes) != 2 || len(s.Failures) != 0 {
				t.Fatalf("instances %d nodes %d failures %d", len(s.Instances), len(s.Nodes), len(s.Failures))
			}
		}},
		{"failure_recorded", []event.Event{
			event.InstanceFailed{Instance: "i1", Category: event.FailureCrashLoop, Detail: "3 crashes", AtUnixMs: 5},
			event.RunnerStatusUpdated{Runner: "r-i1-a", Instance: "i1", Rank: 0, Node: "a", Status: event.RunnerRunning},
		}, func(t *testing.T, s State) {
			if st := s.Instances["i1"].Status; st != InstanceFailed {
				t.Fatalf("status %s, want failed (sticky)", st)
			}
			f := s.Failures[0]
			if len(s.Failures) != 1 || f.Instance != "i1" || f.Model != "m" || f.Index != 9 || len(f.Nodes) != 2 || f.Nodes[1] != "b" {
				t.Fatalf("failures %+v", s.Failures)
			}
			if got := s.ReadyInstancesForModel("m"); len(got) != 0 {
				t.Fatalf("failed instance listed as ready: %v", got)
			}
		}},
		{"downloads", []event.Event{
			event.DownloadCompleted{Node: "c", Model: "m", Bytes: 99},
			event.DownloadFailed{Node: "c", Model: "n", Reason: "404"},
			event.DownloadPending{Node: "c", Model: "n"},
			event.NodeJoined{Node: "c", AtUnixMs: 50},
		}, func(t *testing.T, s State) {
			if d, ok := s.DownloadOf("c", "m"); !ok || d.Status != DownloadCompleted || d.Bytes != 99 {
				t.Fatalf("m: %+v %v", d, ok)
			}
			if d, _ := s.DownloadOf("c", "n"); d.Status != DownloadPending || d.Reason != "" {
				t.Fatalf("pending must clear the failure: %+v", d)
			}
			if s.Nodes["c"].JoinedAtUnixMs != 50 {
				t.Fatal("re-join did not update")
			}
		}},
		{"tracing_and_new_term", []event.Event{
			event.TracingSet{Enabled: true},
			event.MasterElected{Node: "b", Term: 4},
		}, func(t *testing.T, s State) {
			if !s.Tracing || s.Term != 4 || s.Master != "b" {
				t.Fatalf("tracing %t term %d master %s", s.Tracing, s.Term, s.Master)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, replay(t, base(t), tt.evs...))
		})
	}
}

func TestTerminalRunnerCannotResume(t *testing.T) {
	s := replay(t, base(t), event.RunnerStatusUpdated{Runner: "r-i1-a", Instance: "i1", Node: "a", Status: event.RunnerStopped})
	if _, err := Apply(s, next(s, ready("i1", 0, "a"))); !errors.Is(err, ErrConflict) {
		t.Fatalf("same runner id after stop: got %v, want ErrConflict", err)
	}
	// A replacement runner (new id) may take over the rank.
	s = replay(t, s, event.RunnerStatusUpdated{Runner: "r2", Instance: "i1", Node: "a", Status: event.RunnerReady})
	if s.Instances["i1"].Status != InstanceReady {
		t.Fatal("replacement runner did not restore readiness")
	}
}

func TestFailureHistoryBounded(t *testing.T) {
	s := replay(t, State{}, event.MasterElected{Node: "a", Term: 1}, event.NodeJoined{Node: "a"})
	insts := make([]ids.InstanceID, MaxFailures+6)
	for i := range insts {
		insts[i] = instName(i)
		single := event.InstanceCreated{Instance: insts[i], Model: "m", Backend: "native-cpu",
			Placement: []event.Shard{{Node: "a", LayerStart: 0, LayerEnd: 1, HoldsEmbedding: true, HoldsHead: true}},
			Layers:    1, ContextTokens: 1}
		s = replay(t, s, single, event.InstanceFailed{Instance: insts[i], Category: event.FailureWedged})
	}
	// A repeated report for an old instance replaces its record and
	// becomes the newest.
	s = replay(t, s, event.InstanceFailed{Instance: insts[len(insts)-3], Category: event.FailureCrashLoop})
	if len(s.Failures) != MaxFailures {
		t.Fatalf("%d records, want %d", len(s.Failures), MaxFailures)
	}
	if s.Failures[0].Instance != insts[6] {
		t.Fatalf("oldest kept %s, want %s", s.Failures[0].Instance, insts[6])
	}
	last := s.Failures[MaxFailures-1]
	if last.Instance != insts[len(insts)-3] || last.Category != event.FailureCrashLoop {
		t.Fatalf("newest %+v", last)
	}
	if err := Check(s); err != nil {
		t.Fatal(err)
	}
}

func instName(i int) ids.InstanceID {
	return ids.InstanceID("inst-" + string(rune('a'+i/26)) + string(rune('a'+i%26)))
}

// TestEveryEventKindHasARule guards step's type switch: a new event kind
// without an apply rule would otherwise be rejected at runtime.
func TestEveryEventKindHasARule(t *testing.T) {
	covered := map[event.Kind]bool{}
	s := base(t)
	for _, ev := range []event.Event{
		event.TracingSet{}, event.NodeJoined{Node: "d"}, event.DownloadPending{Node: "d", Model: "m"},
		event.DownloadCompleted{Node: "d", Model: "m"}, event.DownloadFailed{Node: "d", Model: "m", Reason: "x"},
		event.NodeLeft{Node: "d", Reason: event.LeaveGraceful}, twoRank("i2", "m", "a", "c"),
		ready("i2", 0, "a"), event.InstanceFailed{Instance: "i2", Category: event.FailureWedged},
		event.InstanceDeleted{Instance: "i2", Reason: event.DeleteFailed},
		retired(event.KindTaskAcknowledged), retired(event.KindTaskCancelled), retired(event.KindTaskFinished),
		retired(event.KindTaskCreated), event.MasterElected{Node: "b", Term: 2},
		event.APIKeysSet{Node: "d", Keys: []event.APIKey{{Name: "k", Scope: event.ScopeAdmin, Digest: strings.Repeat("0", 64)}}},
		event.ModelAdded{Card: card("x", 2)}, event.ModelRemoved{Model: "x"},
		event.APIKeyAdded{Key: event.APIKey{Name: "ops", Scope: event.ScopeAdmin, Digest: strings.Repeat("0", 64)}, Node: "a"},
		event.APIKeyRemoved{Name: "ops"},
	} {
		s = replay(t, s, ev)
		covered[ev.Kind()] = true
	}
	for _, k := range append(event.EventKinds(), event.RetiredKinds()...) {
		if !covered[k] {
			t.Errorf("no test applies %s", k)
		}
	}
}

// TestAPIKeysOutliveTheNode: a node's keys stay enforced after it leaves (a
// protected node going away must not open the cluster) and go only when the
// node reports an empty set.
func TestAPIKeysOutliveTheNode(t *testing.T) {
	k := []event.APIKey{{Name: "admin", Scope: event.ScopeAdmin, Digest: strings.Repeat("a", 64)}}
	s := replay(t, base(t), event.NodeJoined{Node: "d"}, event.APIKeysSet{Node: "d", Keys: k},
		event.NodeLeft{Node: "d", Reason: event.LeaveTimedOut})
	if len(s.APIKeys["d"]) != 1 {
		t.Fatalf("the keys of a node that left: %+v", s.APIKeys)
	}
	s = replay(t, s, event.APIKeysSet{Node: "d"})
	if _, ok := s.APIKeys["d"]; ok {
		t.Fatalf("an empty set kept the node's keys: %+v", s.APIKeys)
	}
}

// TestModelCatalog: cards enter and leave the replicated catalog; the same
// card again is a no-op; removal leaves the nodes' downloads (the bytes are
// where they are) and an emptied catalog hashes like one that never held a
// card.
func TestModelCatalog(t *testing.T) {
	start := base(t)
	tests := []struct {
		name  string
		evs   []event.Event
		check func(t *testing.T, s State)
	}{
		{"added", []event.Event{event.ModelAdded{Card: card("x", 2)}}, func(t *testing.T, s State) {
			if c, ok := s.Models["x"]; !ok || c.Layers != 2 {
				t.Fatalf("models %+v", s.Models)
			}
		}},
		{"same_card_twice", []event.Event{event.ModelAdded{Card: card("x", 2)}, event.ModelAdded{Card: card("x", 2)}}, func(t *testing.T, s State) {
			if len(s.Models) != 1 {
				t.Fatalf("models %+v", s.Models)
			}
		}},
		{"removed_keeps_downloads", []event.Event{event.ModelAdded{Card: card("x", 2)},
			event.DownloadCompleted{Node: "a", Model: "x", Bytes: 5}, event.ModelRemoved{Model: "x"}}, func(t *testing.T, s State) {
			if s.Models != nil {
				t.Fatalf("models %+v, want none", s.Models)
			}
			if s.Nodes["a"].Downloads["x"].Status != DownloadCompleted {
				t.Fatalf("node a's download of x went with the card: %+v", s.Nodes["a"].Downloads)
			}
		}},
		{"emptied_hashes_as_before", []event.Event{event.ModelAdded{Card: card("x", 2)}, event.ModelRemoved{Model: "x"}}, func(t *testing.T, s State) {
			s.Term, s.LastIndex = start.Term, start.LastIndex
			if Hash(s) != Hash(start) {
				t.Fatal("a catalog emptied again changes the State's hash")
			}
		}},
		{"removed_after_instance", []event.Event{event.ModelAdded{Card: card("m", 8)},
			event.InstanceDeleted{Instance: "i1", Reason: event.DeleteOperator}, event.ModelRemoved{Model: "m"}}, func(t *testing.T, s State) {
			if _, ok := s.Models["m"]; ok {
				t.Fatalf("models %+v", s.Models)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := replay(t, start, tt.evs...)
			b, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(b); err != nil {
				t.Fatalf("the State does not decode: %v", err)
			}
			tt.check(t, s)
		})
	}
}

// TestRunTimeKeys: keys added at run time enter and leave the State by
// name; the same key again is a no-op, another key under a taken name and
// the removal of an unknown name are refused, and a State emptied of them
// hashes like one that never held any.
func TestRunTimeKeys(t *testing.T) {
	start := base(t)
	added := func(name, scope, digest string) event.APIKeyAdded {
		return event.APIKeyAdded{Key: event.APIKey{Name: name, Scope: scope, Digest: strings.Repeat(digest, 64)}, Node: "b", AtUnixMs: 1700000000000}
	}
	tests := []struct {
		name  string
		evs   []event.Event
		err   error // of the last event; nil: all apply
		check func(t *testing.T, s State)
	}{
		{"added", []event.Event{added("ops", event.ScopeAdmin, "a")}, nil, func(t *testing.T, s State) {
			k := s.AddedKeys["ops"]
			if k.Scope != event.ScopeAdmin || k.Node != "b" || k.AtUnixMs != 1700000000000 || k.Digest != strings.Repeat("a", 64) {
				t.Fatalf("added keys %+v", s.AddedKeys)
			}
		}},
		{"same_key_twice", []event.Event{added("ops", event.ScopeAdmin, "a"), added("ops", event.ScopeAdmin, "a")}, nil, func(t *testing.T, s State) {
			if len(s.AddedKeys) != 1 {
				t.Fatalf("added keys %+v", s.AddedKeys)
			}
		}},
		{"taken_name", []event.Event{added("ops", event.ScopeAdmin, "a"), added("ops", event.ScopeAdmin, "b")}, ErrExists, nil},
		{"unknown_name", []event.Event{event.APIKeyRemoved{Name: "ops"}}, ErrUnknownKey, nil},
		{"removed_hashes_as_before", []event.Event{added("ops", event.ScopeAdmin, "a"), added("ci", event.ScopeInference, "c"),
			event.APIKeyRemoved{Name: "ops"}, event.APIKeyRemoved{Name: "ci"}}, nil, func(t *testing.T, s State) {
			if s.AddedKeys != nil {
				t.Fatalf("added keys %+v, want none", s.AddedKeys)
			}
			s.Term, s.LastIndex = start.Term, start.LastIndex
			if Hash(s) != Hash(start) {
				t.Fatal("a State emptied of run-time keys changes its hash")
			}
		}},
		{"beside_node_keys", []event.Event{event.APIKeysSet{Node: "a", Keys: []event.APIKey{{Name: "admin", Scope: event.ScopeAdmin, Digest: strings.Repeat("d", 64)}}},
			added("ci", event.ScopeInference, "c")}, nil, func(t *testing.T, s State) {
			if len(s.APIKeys["a"]) != 1 || len(s.AddedKeys) != 1 {
				t.Fatalf("node keys %+v, added keys %+v", s.APIKeys, s.AddedKeys)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start
			if tt.err != nil {
				s = replay(t, s, tt.evs[:len(tt.evs)-1]...)
				_, err := Apply(s, next(s, tt.evs[len(tt.evs)-1]))
				if !errors.Is(err, tt.err) {
					t.Fatalf("got %v, want %v", err, tt.err)
				}
				return
			}
			s = replay(t, s, tt.evs...)
			b, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(b); err != nil {
				t.Fatalf("the State does not decode: %v", err)
			}
			tt.check(t, s)
		})
	}
}
