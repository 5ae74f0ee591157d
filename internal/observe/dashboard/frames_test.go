package dashboard

import (
	"testing"
	"time"
)

// TestActivitySampler: one tokens/s sample per step, from the growth of
// the generated tokens, and none older than the history.
func TestActivitySampler(t *testing.T) {
	tokens := 0.0
	a := &activitySampler{read: func() (Activity, error) {
		return Activity{GeneratedTokens: tokens, InFlight: map[string]float64{"i": 1}}, nil
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
