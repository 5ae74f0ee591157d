package runner

import (
	"context"
	"errors"
	"time"

	"github.com/skulk/skulk/internal/engine/model"
)

// stepGather bounds how long a decode step waits for the other decoding
// tasks' next tokens once one is ready: a few sampling and detokenizing
// turns, far less than a step of any model worth batching.
const stepGather = 2 * time.Millisecond

// errStepperStopped answers steps asked of a stepper whose model is closing.
var errStepperStopped = errors.New("runner: the model is closing")

// stepper batches the decode steps of the tasks generating at once: a step
// waits until every decoding task has its next token ready (or stepGather
// has passed since the first was) and runs them all in one
// model.Shard.Step, which reads the weights once for all of them. Step is
// bit for bit Forward for each sequence, so the company a step keeps
// changes its speed, never its results. One goroutine (run) owns the
// pending steps and the count of decoding tasks; tasks reach it through
// msgs.
type stepper struct {
	shard  *model.Shard
	gather time.Duration
	msgs   chan stepMsg
	stop   context.CancelFunc
	done   chan struct{}
	// onStep, when set (tests), is called by run with each step's size.
	onStep func(n int)
}

type stepKind uint8

const (
	stepJoin  stepKind = iota // a task starts decoding
	stepLeave                 // a task is done decoding
	stepRun                   // a task's next token is ready
)

type stepMsg struct {
	kind   stepKind
	cache  *model.Cache
	tok    int32
	logits []float32  // stepRun: filled with the step's logits
	reply  chan error // stepRun: answered once, buffered
}

// newStepper starts a stepper that waits up to gather for a step's company.
func newStepper(shard *model.Shard, gather time.Duration, onStep func(n int)) *stepper {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stepper{shard: shard, gather: gather, msgs: make(chan stepMsg), stop: cancel, done: make(chan struct{}), onStep: onStep}
	go s.run(ctx)
	return s
}

// close stops the stepper and waits for it; steps still pending are
// answered with errStepperStopped.
func (s *stepper) close() {
	s.stop()
	<-s.done
}

func (s *stepper) send(m stepMsg) bool {
	select {
	case s.msgs <- m:
		return true
	case <-s.done:
		return false
	}
}

// join seats a task that is about to decode; the decoder's leave must
// follow.
func (s *stepper) join(nVocab int) *decoder {
	d := &decoder{s: s, reply: make(chan error, 1), logits: make([]float32, nVocab)}
	d.joined = s.send(stepMsg{kind: stepJoin})
	return d
}

// decoder is one task's seat at a stepper.
type decoder struct {
	s      *stepper
	joined bool
	reply  chan error
	logits []float32 // the last step's logits, owned by the task between steps
}

// step appends tok to the sequence in cache and returns the logits of the
// position after it, valid until the next step.
func (d *decoder) step(cache *model.Cache, tok int32) ([]float32, error) {
	if !d.joined || !d.s.send(stepMsg{kind: stepRun, cache: cache, tok: tok, logits: d.logits, reply: d.reply}) {
		return nil, errStepperStopped
	}
	select {
	case err := <-d.reply:
		return d.logits, err
	case <-d.s.done:
		return nil, errStepperStopped
	}
}

// leave gives up the task's seat.
func (d *decoder) leave() {
	if d.joined {
		d.s.send(stepMsg{kind: stepLeave})
		d.joined = false
	}
}

func (s *stepper) run(ctx context.Context) {
	defer close(s.done)
	var (
		st      model.Steps
		pending []stepMsg
		caches  []*model.Cache
		toks    []int32
		active  int
	)
	gather := time.NewTimer(s.gather)
	gather.Stop()
	for {
		if len(pending) == 0 || len(pending) < active {
			var deadline <-chan time.Time
			if len(pending) > 0 {
				deadline = gather.C
			}
			select {
			case <-ctx.Done():
				for _, p := range pending {
					p.reply <- errStepperStopped
				}
				return
			case m := <-s.msgs:
				switch m.kind {
				case stepJoin:
					active++
				case stepLeave:
					active--
				case stepRun:
					if len(pending) == 0 {
						gather.Reset(s.gather)
					}
					pending = append(pending, m)
				}
				continue
			case <-deadline:
			}
		}
		gather.Stop()
		caches, toks = caches[:0], toks[:0]
		for _, p := range pending {
			caches = append(caches, p.cache)
			toks = append(toks, p.tok)
		}
		if s.onStep != nil {
			s.onStep(len(pending))
		}
		res, err := s.shard.Step(&st, caches, model.Batch{Tokens: toks})
		nv := len(pending[0].logits)
		for i, p := range pending {
			if err != nil {
				// Refused as a whole (a full cache, say): each alone, so
				// that only the sequence at fault fails.
				r, err := s.shard.Forward(p.cache, model.Batch{Tokens: toks[i : i+1]})
				if err == nil {
					copy(p.logits, r.Logits)
				}
				p.reply <- err
				continue
			}
			copy(p.logits, res.Logits[i*nv:(i+1)*nv])
			p.reply <- nil
		}
		clear(pending) // drop the caches
		clear(caches)
		pending = pending[:0]
	}
}
