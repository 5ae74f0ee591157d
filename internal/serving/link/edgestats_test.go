package link

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/state"
	"github.com/skulk/skulk/internal/platform/ids"
)

// TestEncodeEdges: the reading fits one gossip value however many links a
// node sends on, links still connecting first (a stuck instance's
// diagnosis needs them), and decodes back.
func TestEncodeEdges(t *testing.T) {
	for _, n := range []int{0, 1, 3, 40} {
		var links []edgeLink
		for i := range n {
			st := LinkConnected
			if i%4 == 3 {
				st = LinkWaiting
			}
			links = append(links, edgeLink{Instance: ids.InstanceID(fmt.Sprintf("%024x", i)), Link: i % 3, State: st,
				Err: strings.Repeat("e", maxLinkErr), Objects: 1 << 40, Bytes: 1 << 50, P50us: 1234, P99us: 99999})
		}
		b := encodeEdges(links)
		if len(b) > membership.MaxReadingValue {
			t.Fatalf("%d links: %d bytes", n, len(b))
		}
		var back []edgeLink
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if n > 0 && len(back) == 0 {
			t.Fatalf("%d links: none encoded", n)
		}
		seenConnected := false
		for _, l := range back {
			seenConnected = seenConnected || l.State == LinkConnected
			if l.State == LinkWaiting && seenConnected {
				t.Fatalf("%d links: a waiting link after a connected one: %s", n, b)
			}
		}
		if n <= 1 && len(back) != n {
			t.Fatalf("%d links: %d encoded", n, len(back))
		}
	}
}

// TestEdgeDiagnostics: every edge of a split instance, from the sending
// rank's node's report (unknown without one); none for a whole instance.
func TestEdgeDiagnostics(t *testing.T) {
	st := state.State{Instances: map[ids.InstanceID]state.Instance{
		"split": {Model: "m", Placement: []event.Shard{{Node: "a", LayerEnd: 2}, {Node: "b", LayerStart: 2, LayerEnd: 4}, {Node: "c", LayerStart: 4, LayerEnd: 5}}},
		"whole": {Model: "m", Placement: []event.Shard{{Node: "a", LayerEnd: 5}}},
	}}
	links := map[ids.NodeID]map[linkKey]edgeLink{
		"a": {{"split", 0}: {Instance: "split", Link: 0, State: "connected", Objects: 7, Bytes: 700, P50us: 1500, P99us: 4000}},
		"b": {{"split", 1}: {Instance: "split", Link: 1, State: "waiting", Err: "no route"}},
		// c's report of link 2 has not arrived; a's report of a link it
		// does not send on is ignored.
		"c": {},
	}
	links["a"][linkKey{"split", 2}] = edgeLink{Instance: "split", Link: 2, State: "connected"}
	got := edgeDiagnostics(st, links)
	want := []EdgeDiagnostics{
		{Instance: "split", Model: "m", Link: 0, FromRank: 0, FromNode: "a", ToRank: 1, ToNode: "b", State: "connected", Bytes: 700, Objects: 7, P50Ms: 1.5, P99Ms: 4},
		{Instance: "split", Model: "m", Link: 1, FromRank: 1, FromNode: "b", ToRank: 2, ToNode: "c", State: "waiting", Error: "no route"},
		{Instance: "split", Model: "m", Link: 2, FromRank: 2, FromNode: "c", ToRank: 0, ToNode: "a", State: "unknown"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("edges\n%+v\nwant\n%+v", got, want)
	}
}
