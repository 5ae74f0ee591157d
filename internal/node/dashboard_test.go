package node

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/observe/metrics"
	"github.com/skulk/skulk/internal/platform/ids"
)

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
			b := rttReading(in)
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

// TestActivitySampler: one tokens/s sample per step, from the growth of
// the generated tokens, and none older than the history.
func TestActivitySampler(t *testing.T) {
	tokens := 0.0
	a := &activitySampler{read: func() (metrics.Activity, error) {
		return metrics.Activity{GeneratedTokens: tokens, InFlight: map[string]float64{"i": 1}}, nil
	}}
	t0 := time.Unix(1_000_000, 0)
	a.sample(t0)
	tokens = 50
	a.sample(t0.Add(2 * time.Second)) // within the step: no sample
	f := a.sample(t0.Add(activityStep))
	if len(f.Samples) != 1 || f.Samples[0].TokensPerSec != 50/activityStep.Seconds() || f.InFlight["i"] != 1 {
		t.Fatalf("frame %+v", f)
	}
	f = a.sample(t0.Add(activityStep + activityHistory + time.Second + activityStep))
	if len(f.Samples) != 1 || f.Samples[0].TokensPerSec != 0 {
		t.Fatalf("after the history window: %+v", f.Samples)
	}
}
