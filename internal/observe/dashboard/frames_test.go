package dashboard

import (
	"context"
	"log/slog"
	"strings"
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

// TestFramesCarryDeparted: the frames end with the departed nodes and the
// self frame names the chat's defaults.
func TestFramesCarryDeparted(t *testing.T) {
	nothing := func(context.Context) (any, error) { return map[string]any{}, nil }
	src := Sources{
		Self:      SelfFrame{Node: "node-a", Chat: ChatDefaults{MaxTokens: 512, Temperature: 0.8, TopP: 0.95}},
		State:     nothing,
		Cluster:   nothing,
		Nodes:     func(context.Context) any { return []any{} },
		Downloads: func() any { return map[string]any{} },
		Timeline:  func() any { return map[string]any{} },
		Departed:  func() any { return []map[string]string{{"node": "node-b"}} },
		Activity:  func() (Activity, error) { return Activity{}, nil },
	}
	frames, _ := Frames(src, slog.New(slog.DiscardHandler))
	got := map[string]string{}
	for _, f := range frames(t.Context()) {
		msg, err := message(f)
		if err != nil {
			t.Fatal(err)
		}
		got[f.Name] = string(msg)
	}
	if want := "event: departed\ndata: [{\"node\":\"node-b\"}]\n\n"; got["departed"] != want {
		t.Errorf("departed frame %q, want %q", got["departed"], want)
	}
	if !strings.Contains(got["self"], `"chat":{"max_tokens":512,"temperature":0.8,"top_p":0.95}`) {
		t.Errorf("self frame %q lacks the chat's defaults", got["self"])
	}
}
