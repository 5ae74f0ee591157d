package runner

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/serving/request"
)

// TestWatchStalled drives the watchdog's rule through its cases.
func TestWatchStalled(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type ev struct {
		at    time.Duration
		busy  *bool
		beat  *Progress
		chunk bool
	}
	yes, no := true, false
	beat := func(steps uint64, in bool) *Progress { return &Progress{Steps: steps, InStep: in} }
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

// TestStoppedRunnerStalls stops a real runner (SIGSTOP) with a request in
// flight, mid-stream or before its first chunk: the stream ends with an
// error chunk naming the stall within 5 s, the runner is killed, Stall
// says why and the final status names the stall.
func TestStoppedRunnerStalls(t *testing.T) {
	for _, midStream := range []bool{true, false} {
		name := "before the first chunk"
		if midStream {
			name = "mid-stream"
		}
		t.Run(name, func(t *testing.T) {
			c := loadedClient(t, LoadSpec{})
			time.Sleep(2 * HeartbeatInterval) // the runner has heartbeaten
			if !midStream {
				syscall.Kill(-c.Pid(), syscall.SIGSTOP)
			}
			ch, err := c.Generate(t.Context(), "stalled", greedy("Once upon a time", 100000))
			if err != nil {
				t.Fatal(err)
			}
			if midStream {
				<-ch
				syscall.Kill(-c.Pid(), syscall.SIGSTOP)
			}
			start := time.Now()
			t.Cleanup(func() { syscall.Kill(-c.Pid(), syscall.SIGCONT) })
			r := collect(t, ch)
			took := time.Since(start)
			if r.last.Kind != request.ChunkError || r.last.Error == nil || r.last.Error.Code != CodeRunnerStalled {
				t.Fatalf("the stream ended with %+v, want an error chunk with code %s", r.last, CodeRunnerStalled)
			}
			if took > 5*time.Second {
				t.Errorf("the error came after %v, want within 5s", took)
			}
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the stalled runner was not killed")
			}
			var se *StallError
			if err := c.Stall(); !errors.As(err, &se) || !se.Silent {
				t.Fatalf("Stall() = %v, want a silent stall", err)
			}
			var final Status
			for st := range c.Statuses() {
				final = st
			}
			if final.State != StateFailed || !strings.Contains(final.Reason, "stalled") {
				t.Fatalf("final status %+v, want failed naming the stall", final)
			}
			t.Logf("error chunk after %v: %s", took, r.last.Error.Message)
		})
	}
}
