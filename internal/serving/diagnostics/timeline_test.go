package diagnostics

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/platform/fault"
)

// TestTimelineRing: the ring keeps the newest timelineSize entries, oldest
// first, and the window picks those of the last N minutes.
func TestTimelineRing(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	tl := newTimeline(func() time.Time { return clock })
	const added = timelineSize + 250
	for i := range added {
		tl.add("Tick", "", fmt.Sprint(i))
		clock = clock.Add(time.Second)
	}
	tests := []struct {
		name           string
		minutes        int
		count          int
		first, last    string
		wantParamError bool
	}{
		{"every kept entry", 60, timelineSize, fmt.Sprint(added - timelineSize), fmt.Sprint(added - 1), false},
		{"the default window", 0, DefaultTimelineMinutes * 60, fmt.Sprint(added - DefaultTimelineMinutes*60), fmt.Sprint(added - 1), false},
		{"the last minute", 1, 60, fmt.Sprint(added - 60), fmt.Sprint(added - 1), false},
		{"a negative window", -1, 0, "", "", true},
		{"past a week", maxTimelineMinutes + 1, 0, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := tl.Timeline(t.Context(), tt.minutes)
			if tt.wantParamError {
				if ie, ok := errors.AsType[*fault.Error](err); !ok || ie.Param != "minutes" {
					t.Fatalf("Timeline(%d): %v, want an error about minutes", tt.minutes, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			evs := doc.(Timeline).Events
			if len(evs) != tt.count || evs[0].Detail != tt.first || evs[len(evs)-1].Detail != tt.last {
				t.Fatalf("Timeline(%d): %d entries from %q to %q, want %d from %q to %q", tt.minutes, len(evs),
					evs[0].Detail, evs[len(evs)-1].Detail, tt.count, tt.first, tt.last)
			}
			for i := 1; i < len(evs); i++ {
				if evs[i].At.Before(evs[i-1].At) {
					t.Fatalf("entry %d (%s) is older than the one before it (%s)", i, evs[i].At, evs[i-1].At)
				}
			}
		})
	}
}

// TestDescribe words the events the timeline keeps and leaves an old log's
// task events out.
func TestDescribe(t *testing.T) {
	tests := []struct {
		name   string
		ev     event.Event
		keep   bool
		node   string
		detail string
	}{
		{"placement", event.InstanceCreated{Instance: "inst1", Model: "stories260k", ContextTokens: 512,
			Placement: []event.Shard{{Node: "node-a"}, {Node: "node-b"}}}, true, "node-a", "instance inst1 of stories260k placed on node-a, node-b (512 tokens of context) [index 7, term 2]"},
		{"deletion", event.InstanceDeleted{Instance: "inst1", Reason: event.DeleteOperator}, true, "", "instance inst1 deleted (operator) [index 7, term 2]"},
		{"failure", event.InstanceFailed{Instance: "inst1", Category: event.FailureCrashLoop, Detail: "runner failed 3 times"}, true, "", "instance inst1 failed (crash_loop): runner failed 3 times"},
		{"runner", event.RunnerStatusUpdated{Runner: "r1", Instance: "inst1", Node: "node-a", Status: event.RunnerFailed, Reason: "exit 2"}, true, "node-a", "runner r1 of instance inst1 rank 0 failed: exit 2"},
		{"election", event.MasterElected{Node: "node-a", Term: 2}, true, "node-a", "master of term 2"},
		{"node lost", event.NodeLeft{Node: "node-b", Reason: "failed"}, true, "node-b", "node removed from the cluster (failed)"},
		{"an old log's task", event.RetiredTask{Retired: event.KindTaskFinished, Body: []byte{0xa0}}, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, node, detail, ok := describe(event.IndexedEvent{Index: 7, Term: 2, Event: tt.ev})
			if ok != tt.keep {
				t.Fatalf("kept %v, want %v", ok, tt.keep)
			}
			if !ok {
				return
			}
			if kind != string(tt.ev.Kind()) || string(node) != tt.node || !strings.HasPrefix(detail, tt.detail) {
				t.Errorf("described as %s, %q, %q; want %s, %q, %q", kind, node, detail, tt.ev.Kind(), tt.node, tt.detail)
			}
		})
	}
}

// TestDeparted: a node the membership declared failed or gone, or the
// master removed, is departed from its first such entry until it joins
// again; one that left before the window is not.
func TestDeparted(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	tl := newTimeline(func() time.Time { return clock })
	step := func() { clock = clock.Add(time.Second) }
	// node-old left before the window.
	tl.membership(membership.Event{Kind: membership.EventFailed, Node: "node-old"})
	clock = clock.Add(20 * time.Minute)
	start := clock
	tl.membership(membership.Event{Kind: membership.EventJoin, Node: "node-b"})
	step()
	tl.membership(membership.Event{Kind: membership.EventFailed, Node: "node-b"})
	failedAt := clock
	step()
	kind, node, detail, _ := describe(event.IndexedEvent{Index: 9, Term: 2, Event: event.NodeLeft{Node: "node-b", Reason: event.LeaveTimedOut}})
	tl.add(kind, node, detail)
	step()
	// node-c left gracefully and came back.
	tl.membership(membership.Event{Kind: membership.EventLeave, Node: "node-c"})
	step()
	tl.membership(membership.Event{Kind: membership.EventJoin, Node: "node-c"})
	step()
	// node-d's update is no departure.
	tl.membership(membership.Event{Kind: membership.EventUpdate, Node: "node-d"})
	tl.membership(membership.Event{Kind: membership.EventLeave, Node: "node-e"})
	leftAt := clock

	got := tl.departed(start.Add(-time.Second))
	if len(got) != 2 {
		t.Fatalf("departed %+v, want node-b and node-e", got)
	}
	if b := got[0]; b.Node != "node-b" || !b.Since.Equal(failedAt) || b.Kind != "NodeLeft" || !strings.HasPrefix(b.Detail, "node removed from the cluster") {
		t.Errorf("node-b: %+v, want departed since %s, last by NodeLeft", b, failedAt)
	}
	if e := got[1]; e.Node != "node-e" || !e.Since.Equal(leftAt) || e.Kind != "MemberLeave" {
		t.Errorf("node-e: %+v, want departed since %s by MemberLeave", e, leftAt)
	}
	if all := tl.departed(time.Time{}); len(all) != 3 || all[0].Node != "node-b" || all[2].Node != "node-old" {
		t.Errorf("over the whole ring: %+v, want node-b, node-e and node-old", all)
	}
}
