package state

import (
	"encoding/hex"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/platform/ids"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestEmptyStateEncodesLikeDecoded(t *testing.T) {
	b, err := Encode(State{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if Hash(s) != Hash(State{}) {
		t.Fatal("a decoded empty State hashes differently from the zero State")
	}
}

// TestGoldenHash pins the canonical encoding of the base fixture: a change
// to State's layout or the encoding changes every node's hash, so it must
// be deliberate (run with -update and review).
func TestGoldenHash(t *testing.T) {
	s := base(t)
	b, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	h := Hash(s)
	got := hex.EncodeToString(h[:]) + "\n" + hex.EncodeToString(b) + "\n"
	path := filepath.Join("testdata", "base_state.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Fatalf("canonical State encoding changed:\n got %s\nwant %s", got, want)
	}
	raw, _ := hex.DecodeString(strings.Split(string(want), "\n")[1])
	if _, err := Decode(raw); err != nil {
		t.Fatalf("golden snapshot no longer decodes: %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := Encode(base(t))
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(s *State)) []byte {
		s := base(t)
		f(&s)
		b, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// asMap decodes the State loosely so a test can add a field to it.
	asMap := func() map[string]any {
		var m map[string]any
		if err := cbor.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	extra := asMap()
	extra["leader_lease"] = 1
	extraBytes, _ := cbor.Marshal(extra)

	tests := []struct {
		name  string
		input []byte
		as    any
	}{
		{"trailing_bytes", append(append([]byte{}, good...), 0), new(*cbor.ExtraneousDataError)},
		{"unknown_field", extraBytes, new(*cbor.UnknownFieldError)},
		{"duplicate_key", []byte{0xa2, 0x67, 't', 'r', 'a', 'c', 'i', 'n', 'g', 0xf5, 0x67, 't', 'r', 'a', 'c', 'i', 'n', 'g', 0xf4}, new(*cbor.DupMapKeyError)},
		{"truncated", good[:len(good)/2], nil},
		{"not_a_state", []byte{0x01}, nil},
		{"runner_count", mutate(func(s *State) {
			inst := s.Instances["i1"]
			inst.Runners = inst.Runners[:1]
			s.Instances = with(s.Instances, "i1", inst)
		}), nil},
		{"status_disagrees", mutate(func(s *State) {
			inst := s.Instances["i1"]
			inst.Status = InstancePending
			s.Instances = with(s.Instances, "i1", inst)
		}), nil},
		{"model_under_another_id", mutate(func(s *State) { s.Models = map[ids.ModelID]event.ModelCard{"y": card("x", 1)} }), nil},
		{"model_invalid_card", mutate(func(s *State) {
			c := card("x", 2)
			c.LayerBytes = c.LayerBytes[:1]
			s.Models = map[ids.ModelID]event.ModelCard{"x": c}
		}), nil},
		{"rank_on_unknown_node", mutate(func(s *State) { s.Nodes = without(s.Nodes, "b") }), nil},
		{"bad_placement", mutate(func(s *State) {
			inst := s.Instances["i1"]
			inst.Layers++
			s.Instances = with(s.Instances, "i1", inst)
		}), nil},
		{"created_in_future", mutate(func(s *State) { s.LastIndex = 2 }), nil},
		{"too_many_failures", mutate(func(s *State) { s.Failures = make([]Failure, MaxFailures+1) }), nil},
		{"unknown_download_status", mutate(func(s *State) {
			n := s.Nodes["a"]
			n.Downloads = map[ids.ModelID]Download{"m": {Status: "maybe"}}
			s.Nodes = with(s.Nodes, "a", n)
		}), nil},
		{"term_zero_with_events", mutate(func(s *State) { s.Term = 0 }), nil},
		{"oversize", make([]byte, MaxSnapshotBytes+1), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.input)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Fatalf("got %v, want it to wrap %T", err, tt.as)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	s := State{}
	for _, ev := range []event.Event{
		event.MasterElected{Node: "a", Term: 1}, event.NodeJoined{Node: "a"}, event.NodeJoined{Node: "b"},
		twoRank("i1", "m", "a", "b"), ready("i1", 0, "a"),
	} {
		s, _ = Apply(s, next(s, ev))
		b, err := Encode(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		enc, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Decode(enc)
		if err != nil {
			t.Fatalf("canonical bytes of a decoded State do not decode: %v", err)
		}
		if Hash(s2) != Hash(s) {
			t.Fatal("encoding is not a fixed point")
		}
	})
}

// TestSnapshotOfEarlierRelease: a snapshot written while requests went
// through the control plane holds a "tasks" map, here with task t1 in
// flight (the base fixture of that release, whose eighth event created the
// task). It decodes, the task dropped, to the State the same history gives
// now, and a State encodes its "tasks" empty, as earlier releases did
// without tasks, so mixed releases agree on the hash.
func TestSnapshotOfEarlierRelease(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "snapshot_with_task.golden"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := hex.DecodeString(strings.Split(string(want), "\n")[1])
	if err != nil {
		t.Fatal(err)
	}
	old, err := Decode(raw)
	if err != nil {
		t.Fatalf("a snapshot of an earlier release no longer decodes: %v", err)
	}
	if Hash(old) != Hash(base(t)) {
		t.Fatal("the snapshot of an earlier release decodes to another State than its history gives now")
	}
	b, err := Encode(old)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]cbor.RawMessage
	if err := cbor.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if tasks, ok := keys["tasks"]; !ok || hex.EncodeToString(tasks) != "a0" {
		t.Fatalf("tasks encoded as %x (present %v), want an empty map", tasks, ok)
	}
}
