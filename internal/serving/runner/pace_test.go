package runner

import (
	"testing"
	"time"
)

// TestPacer drives the pacer with steps whose times follow a cost model
// (a step of n decode rows takes decode(n), each prompt row adds row) and
// checks the prompt rows it allows while streams run: none until the
// decode rows' time alone is measured, then 1, growing at most twofold a
// step to promptShare of the decode step, and a step of the decode rows
// alone every paceRefresh steps.
func TestPacer(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name    string
		decode  time.Duration // a step of the 4 streams' decode rows
		row     time.Duration
		chunk   int
		settled int // the limit once measured: promptShare × decode / row, within chunk
	}{
		{"a prompt row costs a third of a decode step (tiny, 32000 vocab)", 12 * ms, 4 * ms, 256, 1},
		{"a prompt row costs a 40th (a model whose head dominates)", 40 * ms, ms, 256, 20},
		{"prompt rows cost next to nothing: the chunk caps them", 100 * ms, time.Microsecond, 256, 256},
		{"a small chunk caps them", 100 * ms, time.Microsecond, 16, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			var p pacer
			cost := func(decode, prompt int) time.Duration {
				d := time.Duration(0)
				if decode > 0 {
					d = c.decode * time.Duration(decode) / 4
				}
				return d + c.row*time.Duration(prompt)
			}
			if n := p.limit(0, 0, c.chunk); n != c.chunk {
				t.Fatalf("no stream running: limit %d, want the chunk %d", n, c.chunk)
			}
			p.observe(0, c.chunk, cost(0, c.chunk))
			prev, sinceAlone, settledAt := 0, 0, -1
			for step := range 60 {
				n := p.limit(4, 4, c.chunk)
				switch {
				case step == 0 && n != 0:
					t.Fatalf("step 0: limit %d before a step of decode rows alone was measured; want 0", n)
				case n == 0:
					if step > 0 && sinceAlone != paceRefresh {
						t.Errorf("step %d: decode rows alone after %d paced steps, want every %d", step, sinceAlone, paceRefresh)
					}
					sinceAlone = 0
				default:
					if n > max(1, 2*prev) || n > c.chunk {
						t.Errorf("step %d: limit %d after %d; want at most twice the last and at most the chunk %d", step, n, prev, c.chunk)
					}
					if settledAt >= 0 && n != c.settled {
						t.Errorf("step %d: limit %d after it settled at %d", step, n, c.settled)
					}
					if n == c.settled && settledAt < 0 {
						settledAt = step
					}
					prev = n
					sinceAlone++
				}
				p.observe(4, n, cost(4, n))
			}
			if settledAt < 0 {
				t.Fatalf("the limit never settled at %d", c.settled)
			}
		})
	}
}

// TestPacerStreamsWaiting: a step taken while the streams' tasks are
// still sampling (no decode row ready) is paced by their decode step's
// time too; a prompt row's cost is learnt only beside decode rows (a step
// of prompt rows alone also pays what every step costs).
func TestPacerStreamsWaiting(t *testing.T) {
	var p pacer
	ms := time.Millisecond
	p.limit(4, 4, 256)
	p.observe(4, 0, 20*ms)
	for range 8 {
		n := p.limit(4, 4, 256)
		p.observe(4, n, 20*ms+2*ms*time.Duration(n))
	}
	want := int(promptShare * 20 / 2)
	if n := p.limit(4, 0, 256); n != want {
		t.Errorf("streams waiting: limit %d, want %d", n, want)
	}
	p.observe(0, want, time.Second) // a slow step of prompt rows alone
	if n := p.limit(4, 0, 256); n != want {
		t.Errorf("after a step of prompt rows alone: limit %d, want still %d", n, want)
	}
	if n := p.limit(0, 0, 256); n != 256 {
		t.Errorf("no stream: limit %d, want the chunk", n)
	}
	if n := p.limit(4, 0, 256); n != 1 {
		t.Errorf("streams again after a step without: limit %d, want 1 (growth starts over)", n)
	}
}
