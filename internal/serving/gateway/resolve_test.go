package gateway

import (
	"slices"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
)

// TestResolveInstances: an id, a model or a unique prefix of an id names
// instances; an ambiguous prefix is refused naming the candidates, and an
// unknown name says where the instances are listed.
func TestResolveInstances(t *testing.T) {
	st := state.State{Instances: map[ids.InstanceID]state.Instance{
		"ce67a1": {Model: "stories260k"},
		"ce67b2": {Model: "stories260k"},
		"d4e5f6": {Model: "qwen3:0.6b"},
		"ab":     {Model: "org/model"},
		"abc":    {Model: "org/model"},
	}}
	tests := []struct {
		ref     string
		want    []ids.InstanceID
		class   fault.Class // of the refusal; "" when it resolves
		message []string    // in the refusal
	}{
		{ref: "d4e5f6", want: []ids.InstanceID{"d4e5f6"}},
		{ref: "d4", want: []ids.InstanceID{"d4e5f6"}},
		{ref: "ce67a", want: []ids.InstanceID{"ce67a1"}},
		{ref: "ab", want: []ids.InstanceID{"ab"}}, // an id wins over the longer ids it starts
		{ref: "stories260k", want: []ids.InstanceID{"ce67a1", "ce67b2"}},
		{ref: "org/model", want: []ids.InstanceID{"ab", "abc"}},
		{ref: "ce67", class: fault.ClassConflict, message: []string{`"ce67" is the start of 2 instances' ids`, "ce67a1 (stories260k), ce67b2 (stories260k)", "give more of the id"}},
		{ref: "c", class: fault.ClassConflict, message: []string{"ce67a1", "ce67b2"}},
		{ref: "ff", class: fault.ClassNotFound, message: []string{`no instance "ff"`, "GET /state lists the instances"}},
		{ref: "qwen3", class: fault.ClassNotFound, message: []string{"its model"}}, // a model is named whole
		{ref: "", class: fault.ClassInvalid, message: []string{"name an instance"}},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := ResolveInstances(st, tt.ref)
			if tt.class == "" {
				if err != nil || !slices.Equal(got, tt.want) {
					t.Fatalf("got %v, %v; want %v", got, err, tt.want)
				}
				return
			}
			if err == nil || fault.ClassOf(err) != tt.class {
				t.Fatalf("got %v, %v; want a refusal of class %s", got, err, tt.class)
			}
			for _, m := range tt.message {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q lacks %q", err, m)
				}
			}
		})
	}
}

// TestResolveInstancesNamesFewCandidates: a prefix of many ids names a few
// and counts the rest.
func TestResolveInstancesNamesFewCandidates(t *testing.T) {
	st := state.State{Instances: map[ids.InstanceID]state.Instance{}}
	for _, c := range "0123456789" {
		st.Instances[ids.InstanceID("a"+string(c))] = state.Instance{Model: "m"}
	}
	_, err := ResolveInstances(st, "a")
	if err == nil || !strings.Contains(err.Error(), "a7 (m), and 2 more") || strings.Contains(err.Error(), "a8") {
		t.Fatalf("%v: want 8 candidates and a count of the other 2", err)
	}
}

func TestResolveNode(t *testing.T) {
	known := []ids.NodeID{"3ad65584-340a-41be-b859-303821b11f39", "3b4a2568-6dff-49c5-8bc4-19387718408a", "c3a1e902-d4ee-46c3-a430-ffbfee27fda1"}
	live := []placement.Node{{ID: string(known[0]), Name: "studio"}, {ID: string(known[1]), Name: "laptop"}, {ID: string(known[2]), Name: "laptop"}}
	for _, c := range []struct {
		ref  string
		want ids.NodeID
		err  fault.Class
		in   string
	}{
		{ref: string(known[1]), want: known[1]},
		{ref: "studio", want: known[0]},
		{ref: "c3a", want: known[2]},
		{ref: "3", err: fault.ClassConflict, in: "names 2 nodes"},
		{ref: "laptop", err: fault.ClassConflict, in: "(laptop)"},
		{ref: "desk", err: fault.ClassNotFound, in: "skulk nodes"},
		{ref: "", err: fault.ClassInvalid, in: "name a node"},
	} {
		got, err := ResolveNode(known, live, c.ref)
		if c.err != "" {
			if fault.ClassOf(err) != c.err || !strings.Contains(err.Error(), c.in) {
				t.Errorf("%q: %v, want a %s error saying %q", c.ref, err, c.err, c.in)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %s %v, want %s", c.ref, got, err, c.want)
		}
	}
}
