package telemetry

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/platform/ids"
)

func TestBudgeted(t *testing.T) {
	m := Memory{TotalBytes: 64 << 30, AvailableBytes: 40 << 30}
	for _, tc := range []struct {
		budget       int64
		total, avail int64
	}{
		{0, 64 << 30, 40 << 30},
		{8 << 30, 8 << 30, 8 << 30},
		{50 << 30, 50 << 30, 40 << 30},
		{100 << 30, 64 << 30, 40 << 30},
	} {
		got := Budgeted(m, tc.budget)
		if got.TotalBytes != tc.total || got.AvailableBytes != tc.avail {
			t.Errorf("budget %d: %+v", tc.budget, got)
		}
	}
}

// TestRTTReading: the round trips fit one telemetry reading, in
// milliseconds, the nearest peers kept when they do not all fit.
func TestRTTReading(t *testing.T) {
	peer := func(i int) ids.NodeID { return ids.NodeID(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)) }
	for _, tc := range []struct {
		name  string
		peers int
		want  int // entries kept
	}{
		{"none", 0, 0},
		{"two", 2, 2},
		{"more than fit", 40, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[ids.NodeID]time.Duration{}
			for i := range tc.peers {
				in[peer(i)] = time.Duration(i+1)*time.Millisecond + 234*time.Microsecond
			}
			b := EncodeRTT(in, membership.MaxReadingValue)
			if len(b) > membership.MaxReadingValue {
				t.Fatalf("%d bytes, over the reading's %d", len(b), membership.MaxReadingValue)
			}
			var got map[ids.NodeID]float64
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("%d entries kept, want %d: %s", len(got), tc.want, b)
			}
			for i := range tc.want {
				if want := float64(i+1) + 0.234; got[peer(i)] != want {
					t.Errorf("peer %d: %v ms, want %v (the nearest first)", i, got[peer(i)], want)
				}
			}
		})
	}
}
