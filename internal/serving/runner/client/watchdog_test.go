package client

import (
	"testing"
	"time"

	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// TestWatchStalled drives the watchdog's rule through its cases.
func TestWatchStalled(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type ev struct {
		at    time.Duration
		busy  *bool
		beat  *proto.Progress
		chunk bool
	}
	yes, no := true, false
	beat := func(steps uint64, in bool) *proto.Progress { return &proto.Progress{Steps: steps, InStep: in} }
	cases := []struct {
		name   string
		events []ev
		now    time.Duration
		want   string // "", "silent" or "idle"
	}{
		{"idle runner never stalls", []ev{{0, &no, beat(0, false), false}}, time.Hour, ""},
		{"no heartbeats at all: an older runner is not judged", []ev{{0, &yes, nil, false}}, time.Hour, ""},
		{"silent while busy", []ev{{0, nil, beat(1, false), false}, {time.Second, &yes, nil, false}}, time.Second + StallSilence + time.Millisecond, "silent"},
		{"silent, but not yet", []ev{{0, nil, beat(1, false), false}, {time.Second, &yes, nil, false}}, time.Second + StallSilence - time.Millisecond, ""},
		{"a long step heartbeats: progress", []ev{{0, &yes, beat(5, true), false}, {time.Minute, nil, beat(5, true), false}}, time.Minute + time.Second, ""},
		{"heartbeats, no step, no chunk", []ev{{0, &yes, beat(5, false), false}, {20 * time.Second, nil, beat(5, false), false}}, 20*time.Second + 100*time.Millisecond, "idle"},
		{"heartbeats and chunks", []ev{{0, &yes, beat(5, false), false}, {19 * time.Second, nil, beat(5, false), true}}, 20 * time.Second, ""},
		{"slow steps measured stretch the idle bound", []ev{
			{0, &yes, beat(1, false), false}, {8 * time.Second, nil, beat(2, false), false}, {16 * time.Second, nil, beat(3, false), false},
			{40 * time.Second, nil, beat(3, false), false}}, 40 * time.Second, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w watch
			for _, e := range c.events {
				now := at(e.at)
				if e.beat != nil || e.chunk {
					w.line(now)
				}
				if e.busy != nil {
					w.busy(*e.busy, now)
				}
				if e.beat != nil {
					w.progress(*e.beat, now)
				}
				if e.chunk {
					w.chunk(now)
				}
			}
			got := ""
			if e := w.stalled(at(c.now), false); e != nil {
				got = "idle"
				if e.Silent {
					got = "silent"
				}
			}
			if got != c.want {
				t.Fatalf("stalled = %q, want %q", got, c.want)
			}
		})
	}
}
