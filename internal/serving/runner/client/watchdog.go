package client

import (
	"fmt"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// The watchdog: a runner reports a heartbeat (TypeProgress) every
// HeartbeatInterval with the count of model steps it has completed and
// whether one is running. The Client declares the runner stalled when it
// has tasks in flight and either hears nothing at all for StallSilence (a
// stopped or wedged process: a long prompt chunk still heartbeats) or
// hears heartbeats while no step runs, none completes and no chunk comes
// for StallIdle plus four times the longest step it has measured. A
// stalled runner's tasks end with an error chunk naming the stall
// (code runner_stalled), and it is killed: its owner sees it exit, with
// Stall naming why, and restarts it as after a crash.
const (
	StallSilence = 3 * time.Second
	StallIdle    = 10 * time.Second
)

// CodeRunnerStalled is the code of the error that ends a stalled runner's
// tasks.
const CodeRunnerStalled = "runner_stalled"

// StallError is why a Client killed its runner.
type StallError struct {
	Silent bool          // no heartbeat at all (else heartbeats without progress)
	For    time.Duration // how long the runner made no progress
}

func (e *StallError) Error() string {
	if e.Silent {
		return fmt.Sprintf("runner stalled: no heartbeat for %v with requests in flight (stopped or hung); killed", e.For.Round(time.Millisecond))
	}
	return fmt.Sprintf("runner stalled: no model step for %v with requests in flight; killed", e.For.Round(time.Millisecond))
}

// watch is the Client's view of its runner's liveness, owned by run.
type watch struct {
	heard     time.Time // the last line from the runner
	beats     bool      // the runner heartbeats (older or fake runners may not)
	steps     uint64    // the last step count heard
	inStep    bool
	stepped   time.Time     // when steps last advanced (or a chunk came)
	longest   time.Duration // the longest gap between two step advances while busy
	busySince time.Time     // when tasks came in flight after none were
}

// heard notes a line from the runner at now.
func (w *watch) line(now time.Time) { w.heard = now }

// progress notes a heartbeat.
func (w *watch) progress(p proto.Progress, now time.Time) {
	w.beats = true
	if p.Steps != w.steps {
		// Step times are measured only while busy: an idle gap is no step.
		if !w.busySince.IsZero() && w.stepped.After(w.busySince) && p.Steps > w.steps {
			w.longest = max(w.longest, now.Sub(w.stepped)/time.Duration(p.Steps-w.steps))
		}
		w.steps, w.stepped = p.Steps, now
	}
	w.inStep = p.InStep
}

// chunk notes a task's output: progress.
func (w *watch) chunk(now time.Time) { w.stepped = now }

// busy notes whether tasks are in flight.
func (w *watch) busy(inFlight bool, now time.Time) {
	switch {
	case !inFlight:
		w.busySince = time.Time{}
	case w.busySince.IsZero():
		w.busySince = now
	}
}

// stalled says whether the runner is stalled at now. With silenceOnly
// (a pipeline stage with no request of its own) only silence counts: its
// steps advance only when the pipeline sends it work.
func (w *watch) stalled(now time.Time, silenceOnly bool) *StallError {
	if w.busySince.IsZero() || !w.beats {
		return nil
	}
	since := func(t time.Time) time.Duration { return now.Sub(later(t, w.busySince)) }
	if d := since(w.heard); d > StallSilence {
		return &StallError{Silent: true, For: d}
	}
	if w.steps > 0 && !w.inStep && !silenceOnly {
		if d := since(w.stepped); d > StallIdle+4*w.longest {
			return &StallError{For: d}
		}
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stallChunk is the error chunk that ends a stalled runner's task.
func stallChunk(e *StallError) *fault.Error {
	return &fault.Error{Class: fault.ClassUnavailable, Code: CodeRunnerStalled,
		Message: e.Error() + "; the runner is restarting: retry the request"}
}
