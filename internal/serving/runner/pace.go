package runner

import "time"

// Pacing of prompt chunks beside running streams.
const (
	// promptShare is how much time a step may spend on prompt rows while
	// streams are running, as a fraction of a step of their decode rows
	// alone: their inter-token gap grows by at most about this much while
	// a long prompt is read (the serving goal is at most 2×).
	promptShare = 0.5
	// paceRefresh is how many paced steps may pass before one is left to
	// the decode rows alone, so that their time alone stays measured as
	// the streams grow, join and leave.
	paceRefresh = 16
)

// pacer sizes the prompt rows of a step that running streams wait for. A
// fixed chunk cannot: a prompt row costs as much as a whole decode step
// of several streams on one model (all of it goes through every block) and
// a small fraction on another (where the vocabulary head dominates), and a
// 256-token chunk held the tiny model's streams for 100 decode steps. So
// the pacer measures the steps: the time of a step of decode rows alone,
// and the time a prompt row adds, and lets a step take as many prompt rows
// as fit in promptShare of the decode step. Growth is bounded by doubling,
// so that a noisy or stale measure costs at most one step of twice the
// rows of the last. Only the step timing differs with the company; the
// chunks' sizes never change a sequence's results (model.StepRows is bit
// for bit the same for any split of a prompt).
//
// The batcher's goroutine owns it; it is a pure function of what observe
// was told.
type pacer struct {
	decode []time.Duration // [n]: a step of n decode rows alone, moving average; 0 unmeasured
	extra  float64         // what a step's prompt rows add to its decode rows' time, moving average (ns; noise can make one negative)
	rows   float64         // those steps' prompt rows, moving average
	last   int             // prompt rows of the last paced step that read any
	since  int             // paced steps since the last of decode rows alone
	paced  bool            // the last limit was for running streams
	alone0 bool            // the last limit was 0: decode rows alone, to measure them
}

// limit is the most prompt rows the next step may read, with streams
// sequences generating of which decoding have their decode row ready:
// chunk when none is (nobody waits for the step), else what the measures
// allow, at least 1 and at most twice the last paced step's; 0 for a step
// of the decode rows alone, to measure them (again).
func (p *pacer) limit(streams, decoding, chunk int) int {
	p.paced, p.alone0 = streams > 0 && chunk > 0, false
	if !p.paced {
		p.last = 0
		return chunk
	}
	if decoding > 0 && (p.alone(decoding) == 0 || p.since >= paceRefresh) {
		p.alone0 = true
		return 0
	}
	// The streams' gap is a step of all their decode rows.
	alone := p.alone(streams)
	if alone == 0 {
		alone = p.alone(decoding)
	}
	n := chunk
	if row := p.row(); row > 0 {
		// (The averages' rounding must not cost a row.)
		n = int(promptShare*float64(alone)/row + 1e-6)
	}
	return max(1, min(n, chunk, 2*p.last))
}

// row is what one prompt row adds to a step (ns), 0 if unmeasured or lost
// in the noise. The ratio of the averages, not the average of each step's
// ratio: a step of one row beside the decode rows measures it as the small
// difference of two noisy times.
func (p *pacer) row() float64 {
	if p.rows == 0 || p.extra <= 0 {
		return 0
	}
	return p.extra / p.rows
}

// alone is the measured time of a step of n decode rows alone, 0 if none
// was measured.
func (p *pacer) alone(n int) time.Duration {
	if n < len(p.decode) {
		return p.decode[n]
	}
	return 0
}

// observe records that the step limit was last asked for computed decode
// decode rows and prompt prompt rows in took.
func (p *pacer) observe(decode, prompt int, took time.Duration) {
	const keep = 3 // of 4: the moving averages' weight of the past
	avg := func(old, x time.Duration) time.Duration {
		if old == 0 {
			return x
		}
		return (keep*old + x) / (keep + 1)
	}
	favg := func(old, x float64, first bool) float64 {
		if first {
			return x
		}
		return (keep*old + x) / (keep + 1)
	}
	switch {
	case prompt == 0 && decode > 0:
		for len(p.decode) <= decode {
			p.decode = append(p.decode, 0)
		}
		p.decode[decode], p.since = avg(p.decode[decode], took), 0
		if !p.alone0 {
			p.last = 0 // no prompt waited: the next one starts over at 1
		}
	case prompt > 0:
		if a := p.alone(decode); decode > 0 && a > 0 {
			// Measured beside decode rows only: their difference cancels
			// what every step costs whatever its rows, which a step of a
			// few prompt rows alone would count as theirs.
			first := p.rows == 0
			p.extra = favg(p.extra, float64(took-a), first)
			p.rows = favg(p.rows, float64(prompt), first)
		}
		if p.paced {
			p.last = prompt
			p.since++
		}
	}
}
