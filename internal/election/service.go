package election

import (
	"context"
	"log/slog"
	"time"

	"github.com/skulk/skulk/internal/election/decide"
	"github.com/skulk/skulk/internal/ids"
	"github.com/skulk/skulk/internal/membership"
)

// Members is the membership as the election uses it.
type Members interface {
	Members() []membership.Member
	Readings() []membership.Reading
	TelemetryChanged() <-chan struct{}
	Publish(key string, value []byte) error
}

// Roles is how the election changes this node's role. Both calls block
// until the switch is done.
type Roles interface {
	// BecomeMaster makes this node master in term.
	BecomeMaster(ctx context.Context, term ids.Term) error
	// BecomeFollower makes this node follow master; fresh discards this
	// node's own log tail (it was a deposed master).
	BecomeFollower(ctx context.Context, master ids.NodeID, fresh bool) error
	// Position is this node's current log position and role.
	Position() Position
}

// Config wires the election service.
type Config struct {
	Self    ids.NodeID
	Members Members
	Roles   Roles
	// Changed wakes the service on membership events (the node's single
	// consumer of membership events forwards them).
	Changed <-chan struct{}
	// Settle is how long a node waits, when it sees no master, for its
	// peers' positions before electing itself (default 1.5 s).
	Settle time.Duration
	// Tick re-publishes the position and re-decides (default 200 ms).
	Tick       time.Duration
	NetworkVer string
	Now        func() time.Time
	Logger     *slog.Logger
}

// Service decides this node's role.
type Service struct{ cfg Config }

// New returns a service; call Run.
func New(cfg Config) *Service {
	if cfg.Settle == 0 {
		cfg.Settle = 1500 * time.Millisecond
	}
	if cfg.Tick == 0 {
		cfg.Tick = 200 * time.Millisecond
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// role is what this node currently does, as far as the service knows.
type role struct {
	master   bool
	term     ids.Term
	follows  ids.NodeID
	assigned bool
}

// Run decides until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	started := s.cfg.Now()
	tick := time.NewTicker(s.cfg.Tick)
	defer tick.Stop()
	var cur role
	var published []byte
	for {
		pos := s.cfg.Roles.Position()
		if b := pos.Encode(); string(b) != string(published) {
			if err := s.cfg.Members.Publish(PositionKey, b); err == nil {
				published = b
			}
		}
		view := s.view(pos)
		out := decide.Decide(view)
		switch {
		case out.Master == "":
		case out.Master == s.cfg.Self && out.Elect:
			// At startup, elect ourselves only after peers had time to join
			// and publish their positions, so a node starting with others
			// does not grab the role from a more advanced log it has not
			// seen yet (and nodes starting together do not all claim it).
			if s.cfg.Now().Sub(started) < s.cfg.Settle || !s.allKnown(view) {
				break
			}
			if !cur.master || cur.term != out.Term {
				s.cfg.Logger.Info("elected master", "term", out.Term, "members", len(view.Members))
				if err := s.cfg.Roles.BecomeMaster(ctx, out.Term); err != nil {
					s.cfg.Logger.Error("could not become master", "err", err)
					break
				}
				cur = role{master: true, term: out.Term, assigned: true}
			}
		case out.Master == s.cfg.Self:
			// We already claim the role in out.Term: nothing to do.
		case !out.Claimed:
			// Another node should elect itself: wait until it claims the
			// role. Following it early would copy its log, make ours look
			// as advanced, and start a second election.
		default:
			if !cur.assigned || cur.master || cur.follows != out.Master {
				fresh := cur.master || out.StepDown
				if fresh {
					s.cfg.Logger.Warn("stepping down: another master holds a higher term; this node's own decisions since the split are discarded",
						"master", out.Master, "term", out.Term)
				} else {
					s.cfg.Logger.Info("following master", "master", out.Master, "term", out.Term)
				}
				if err := s.cfg.Roles.BecomeFollower(ctx, out.Master, fresh); err != nil {
					s.cfg.Logger.Error("could not follow the master", "master", out.Master, "err", err)
					break
				}
				cur = role{follows: out.Master, assigned: true}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-s.cfg.Members.TelemetryChanged():
		case <-s.cfg.Changed:
		}
	}
}

// view builds the decide input from the live members and their positions.
func (s *Service) view(self Position) decide.View {
	positions := map[ids.NodeID]Position{}
	for _, r := range s.cfg.Members.Readings() {
		if r.Key != PositionKey {
			continue
		}
		if p, err := DecodePosition(r.Value); err == nil {
			positions[r.Node] = p
		}
	}
	positions[s.cfg.Self] = self
	v := decide.View{Self: s.cfg.Self}
	for _, m := range s.cfg.Members.Members() {
		p, ok := positions[m.Node]
		if !ok {
			continue // no position yet: it cannot be compared, so it waits
		}
		dm := decide.Member{Node: m.Node, Term: p.Term, Index: p.Index, Master: p.Master,
			StartedAtUnixMs: p.StartedAtUnixMs, MasterOf: p.MasterOf,
			Compatible: s.cfg.NetworkVer == "" || m.Meta.NetworkVersion == s.cfg.NetworkVer}
		if p.HistoryLost != nil {
			dm.Lost = &decide.Loss{After: p.HistoryLost.After, Term: p.HistoryLost.Term}
		}
		v.Members = append(v.Members, dm)
	}
	return v
}

// allKnown reports whether every live member has published a position.
func (s *Service) allKnown(v decide.View) bool {
	return len(v.Members) >= len(s.cfg.Members.Members())
}
