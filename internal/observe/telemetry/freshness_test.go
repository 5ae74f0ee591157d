package telemetry

import (
	"testing"
	"time"
)

func TestFreshness(t *testing.T) {
	f := NewFreshness(time.Second)
	t0 := time.Unix(1000, 0)
	if !f.Observe("a", "res", 1, t0) {
		t.Fatal("a new reading is fresh")
	}
	if !f.Observe("a", "res", 1, t0.Add(2*time.Second)) {
		t.Fatal("two intervals without a change is still fresh")
	}
	if f.Observe("a", "res", 1, t0.Add(2*time.Second+time.Millisecond)) {
		t.Fatal("past two intervals without a change must be partial")
	}
	if !f.Observe("a", "res", 2, t0.Add(3*time.Second)) {
		t.Fatal("a new version is fresh again")
	}
	f.Prune(func(node string) bool { return node != "a" })
	if !f.Observe("a", "res", 2, t0.Add(10*time.Second)) {
		t.Fatal("a pruned reading starts over")
	}
}
