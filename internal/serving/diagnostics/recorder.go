package diagnostics

import (
	"context"
	"time"

	"github.com/skulk/skulk/internal/control/membership"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Recorder is the node's timeline of cluster events: the ring of
// timeline.go behind the calls the node and the API make.
type Recorder struct{ t *timeline }

// NewRecorder returns an empty timeline on the clock now.
func NewRecorder(now func() time.Time) *Recorder { return &Recorder{newTimeline(now)} }

// Add records an entry at the current time.
func (r *Recorder) Add(kind string, node ids.NodeID, detail string) { r.t.add(kind, node, detail) }

// Member records a membership change.
func (r *Recorder) Member(ev membership.Event) { r.t.membership(ev) }

// Follow records the control plane's events until ctx ends.
func (r *Recorder) Follow(ctx context.Context, ctl *plane.Plane) { r.t.follow(ctx, ctl) }

// Changed is signalled (coalesced) after each entry.
func (r *Recorder) Changed() <-chan struct{} { return r.t.changed }

// Timeline answers GET /v1/diagnostics/cluster/timeline?minutes=N.
func (r *Recorder) Timeline(ctx context.Context, minutes int) (any, error) {
	return r.t.Timeline(ctx, minutes)
}

// Latest is the timeline of the default window, cut to its newest n
// entries: the dashboard's timeline frame.
func (r *Recorder) Latest(n int) Timeline {
	tl := r.t.since(r.t.now().Add(-DefaultTimelineMinutes * time.Minute))
	if len(tl) > n {
		tl = tl[len(tl)-n:]
	}
	return Timeline{Events: tl}
}

// Departed lists the nodes that left the cluster within the last window
// and have not joined it again: the dashboard's departed frame, which
// keeps a lost node on the topology after the State dropped it.
func (r *Recorder) Departed(window time.Duration) []Departure {
	return r.t.departed(r.t.now().Add(-window))
}
