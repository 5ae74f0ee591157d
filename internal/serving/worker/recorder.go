package worker

import (
	"strings"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
)

// RecorderSize is how many phases a rank's flight recorder keeps: enough
// for a runner's whole life of restarts and tasks, bounded.
const RecorderSize = 128

// Phase is one step in the life of a rank's runners, as its flight
// recorder keeps it. Details name tasks and reasons, never prompts or
// output.
type Phase struct {
	At     time.Time    `json:"at"`
	Runner ids.RunnerID `json:"runner"`
	Phase  string       `json:"phase"`
	Detail string       `json:"detail,omitempty"`
}

// Phases a flight recorder keeps.
const (
	PhaseDownload  = "download"   // the weights are being fetched first
	PhaseSpawn     = "spawn"      // the process started (detail: its pid)
	PhaseLoad      = "load"       // loading the shard
	PhaseReady     = "ready"      // loaded and serving
	PhaseTaskStart = "task_start" // a task was handed to the runner
	PhaseTaskEnd   = "task_end"   // a task ended (detail: its outcome)
	PhaseError     = "error"      // a step failed (detail: why)
	PhaseExit      = "exit"       // the process ended on its own (detail: why)
	PhaseStop      = "stop"       // the worker stopped the runner
)

// recorder is one rank's flight recorder, across its runners' restarts: a
// ring of the latest phases. The rank's runner goroutine and the tasks
// served on it add phases; diagnostics and the crash log read them.
type recorder struct {
	now func() time.Time // immutable

	mu   sync.Mutex // guards the fields below; held only to copy phases
	ring [RecorderSize]Phase
	n    int // phases recorded in all
}

func newRecorder(now func() time.Time) *recorder { return &recorder{now: now} }

// add records a phase of runner now.
func (r *recorder) add(runner ids.RunnerID, phase, detail string) {
	p := Phase{At: r.now(), Runner: runner, Phase: phase, Detail: detail}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ring[r.n%RecorderSize] = p
	r.n++
}

// phases returns the kept phases, oldest first.
func (r *recorder) phases() []Phase {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n <= RecorderSize {
		return append([]Phase(nil), r.ring[:r.n]...)
	}
	i := r.n % RecorderSize
	return append(append([]Phase(nil), r.ring[i:]...), r.ring[:i]...)
}

// String is the recorder on one line, for the log: "15:04:05.000 runner
// phase detail" entries separated by " | ", oldest first.
func (r *recorder) String() string {
	var b strings.Builder
	for i, p := range r.phases() {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(p.At.Format("15:04:05.000"))
		b.WriteString(" " + string(p.Runner) + " " + p.Phase)
		if p.Detail != "" {
			b.WriteString(" " + p.Detail)
		}
	}
	return b.String()
}
