package dashboard

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Dashboard stream bounds.
const (
	// readTimeout bounds one reading of the frames.
	readTimeout = 2 * time.Second
	// activityHistory is how much of the tokens/s history the Activity
	// frame carries: the page shows it as a chart from its first frame.
	activityHistory = 5 * time.Minute
	// activityStep is the chart's resolution: one sample per step keeps
	// the frame small (60 samples) while it is sent every second.
	activityStep = 5 * time.Second
	// TimelineEntries is how many of the latest timeline entries the
	// timeline frame carries.
	TimelineEntries = 60
	// DepartedWindow is how long the departed frame names a node that
	// left the cluster: the topology shows it as lost for that long (the
	// timeline's default window), unless it comes back or the operator
	// dismisses it.
	DepartedWindow = 15 * time.Minute
)

// ActivitySample is the generation rate over one interval.
type ActivitySample struct {
	At           time.Time `json:"at"`
	TokensPerSec float64   `json:"tokens_per_sec"`
}

// ActivityFrame is the activity frame: this node's requests in flight per
// instance and its generated tokens per second over the last minutes, read
// from its metrics registry (the numbers GET /metrics serves).
type ActivityFrame struct {
	InFlight        map[string]float64 `json:"in_flight"`
	GeneratedTokens float64            `json:"generated_tokens"`
	Samples         []ActivitySample   `json:"samples"`
}

// SelfFrame names the node serving the page.
type SelfFrame struct {
	Node    ids.NodeID `json:"node"`
	Version string     `json:"version"`
	Commit  string     `json:"commit"`
	// Chat is what the page's chat sends, or leaves to the node, when its
	// user sets nothing: skulk chat's defaults.
	Chat ChatDefaults `json:"chat"`
}

// ChatDefaults are the chat's settings when its user sets none: the reply
// cap skulk chat sends (MaxTokens), and the sampling the node applies to a
// request without its own (Temperature, TopP).
type ChatDefaults struct {
	MaxTokens   int     `json:"max_tokens"`
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
}

// Activity is a reading of the node's metrics: its generated tokens so
// far and its requests in flight by instance.
type Activity struct {
	GeneratedTokens float64
	InFlight        map[string]float64
}

// Sources are the node's documents the frames carry. Each is read on the
// broker's goroutine, within the reading's context.
type Sources struct {
	Self SelfFrame
	// State is the GET /state document and Cluster the cluster
	// diagnostics (roles, reachability, addresses); an error (between
	// roles the control plane answers nothing) leaves the page the last
	// one it had.
	State, Cluster func(ctx context.Context) (any, error)
	// Nodes is the members' telemetry, Downloads the downloads in
	// progress and Timeline the latest TimelineEntries entries.
	Nodes     func(ctx context.Context) any
	Downloads func() any
	Timeline  func() any
	// Departed is the nodes that left the cluster within DepartedWindow
	// and have not come back: the State drops a lost node, the page keeps
	// showing it from this frame.
	Departed func() any
	// Activity reads the metrics for the activity frame.
	Activity func() (Activity, error)
}

// Frames returns the broker's reading of the node (BrokerConfig.Frames)
// and its Idle, which keeps the activity's history while no page
// watches. The broker calls both on its one goroutine, which thereby owns
// the activity sampler.
func Frames(src Sources, log *slog.Logger) (frames func(ctx context.Context) []Frame, idle func(ctx context.Context)) {
	act := &activitySampler{read: src.Activity, log: log}
	return func(ctx context.Context) []Frame {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		frames := []Frame{{Name: "self", Doc: src.Self}}
		if st, err := src.State(ctx); err == nil {
			frames = append(frames, Frame{Name: "state", Doc: st})
		}
		if d, err := src.Cluster(ctx); err == nil {
			frames = append(frames, Frame{Name: "cluster", Doc: d})
		}
		now := time.Now()
		return append(frames, Frame{Name: "nodes", Doc: src.Nodes(ctx)},
			Frame{Name: "downloads", Doc: src.Downloads()},
			Frame{Name: "activity", Doc: act.sample(now)},
			Frame{Name: "timeline", Doc: src.Timeline()},
			Frame{Name: "departed", Doc: src.Departed()})
	}, act.idle
}

// activitySampler keeps the tokens/s history of the activity frame. Only
// the dashboard broker's goroutine uses it: on each reading of the frames,
// and on its idle ticks, so the chart has its history when a page opens.
type activitySampler struct {
	read       func() (Activity, error)
	log        *slog.Logger
	samples    []ActivitySample
	lastTokens float64
	lastAt     time.Time
}

// sample reads the metrics, adds a sample when a step has passed, and
// returns the activity frame.
func (a *activitySampler) sample(now time.Time) ActivityFrame {
	m, err := a.read()
	if err != nil {
		a.log.Debug("dashboard activity", "err", err)
	}
	switch {
	case a.lastAt.IsZero():
		a.lastTokens, a.lastAt = m.GeneratedTokens, now
	case now.Sub(a.lastAt) >= activityStep:
		rate := max(0, m.GeneratedTokens-a.lastTokens) / now.Sub(a.lastAt).Seconds()
		a.samples = append(a.samples, ActivitySample{At: now.Truncate(time.Second), TokensPerSec: rate})
		a.lastTokens, a.lastAt = m.GeneratedTokens, now
	}
	for len(a.samples) > 0 && now.Sub(a.samples[0].At) > activityHistory {
		a.samples = a.samples[1:]
	}
	return ActivityFrame{InFlight: m.InFlight, GeneratedTokens: m.GeneratedTokens, Samples: slices.Clone(a.samples)}
}

// idle samples the activity while no page watches (every step, not every
// tick: a metrics gather is not free).
func (a *activitySampler) idle(context.Context) {
	if now := time.Now(); now.Sub(a.lastAt) >= activityStep {
		a.sample(now)
	}
}
