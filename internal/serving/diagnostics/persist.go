package diagnostics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/platform/config"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/vfs"
	"github.com/skulk/skulk/internal/serving/gateway"
	"github.com/skulk/skulk/internal/serving/responsestore"
)

// persistKey is the telemetry key of a node's persistence reading.
const persistKey = "persist"

// persistCheckEvery is how often the node heals the response journal,
// looks for an operator's acknowledgement of a loss and republishes its
// persistence reading. (The event log's owner heals the log on its own
// timer, master.DefaultHealEvery.)
const persistCheckEvery = 2 * time.Second

// persistReading is what a node publishes about its own durability: the
// stores that stopped writing and the history its log lost; empty when all
// is well. It is compact: a reading must fit one gossip packet
// (membership.MaxReadingValue), so messages are written by the reader.
type persistReading struct {
	Log     *storeIssue `json:"log,omitempty"`
	Journal *storeIssue `json:"journal,omitempty"`
	Lost    *lostIssue  `json:"lost,omitempty"`
}

// storeIssue is a store that stopped writing.
type storeIssue struct {
	Cause string `json:"cause"` // low_space, disk_full or write_error
	Dir   string `json:"dir,omitempty"`
	Free  uint64 `json:"free"`
	Floor uint64 `json:"floor,omitempty"`
}

// lostIssue is history the event log lost.
type lostIssue struct {
	After uint64 `json:"after"`
	Saved string `json:"saved,omitempty"`
}

// Store causes.
const (
	causeLowSpace   = "low_space"
	causeDiskFull   = "disk_full"
	causeWriteError = "write_error"
)

// maxDirInReading bounds a directory name in the reading.
const maxDirInReading = 96

func (r persistReading) empty() bool { return r.Log == nil && r.Journal == nil && r.Lost == nil }

// issueOf describes a store's Status, nil when it writes.
func issueOf(s eventlog.Status, dir string) *storeIssue {
	if !s.Degraded {
		return nil
	}
	if len(dir) > maxDirInReading {
		dir = "..." + dir[len(dir)-maxDirInReading+3:]
	}
	is := &storeIssue{Cause: causeWriteError, Dir: dir, Free: s.FreeBytes, Floor: s.Floor}
	switch {
	case errors.Is(s.Cause, eventlog.ErrLowSpace):
		is.Cause = causeLowSpace
	case vfs.IsNoSpace(s.Cause):
		is.Cause = causeDiskFull
	}
	return is
}

// issues renders a reading for the health and diagnostics documents.
func (r persistReading) issues() []gateway.PersistenceIssue {
	var out []gateway.PersistenceIssue
	for _, s := range []struct {
		name, what, keeps string
		is                *storeIssue
	}{
		{"event_log", "the event log", "the cluster's decisions (placements, deletions) are kept in memory only and are lost if the node restarts", r.Log},
		{"response_journal", "the response journal", "responses are kept in memory only and are lost if the node restarts", r.Journal},
	} {
		if s.is == nil {
			continue
		}
		var why string
		switch s.is.Cause {
		case causeLowSpace:
			why = fmt.Sprintf("%d bytes free on the disk of %s, under the floor of %d bytes (SKULK_LOG_FREE_FLOOR)", s.is.Free, s.is.Dir, s.is.Floor)
		case causeDiskFull:
			why = fmt.Sprintf("the disk of %s is full (%d bytes free)", s.is.Dir, s.is.Free)
		default:
			why = fmt.Sprintf("a write to %s failed", s.is.Dir)
		}
		fix := "free disk space: the node resumes writing by itself"
		if s.is.Cause == causeWriteError {
			fix = "check the disk (the node's log has the error) and restart the node"
		}
		out = append(out, gateway.PersistenceIssue{Store: s.name, Problem: "degraded", Dir: s.is.Dir, FreeBytes: s.is.Free, FloorBytes: s.is.Floor,
			Message: fmt.Sprintf("persistence degraded: %s stopped writing: %s; %s; %s", s.what, why, s.keeps, fix)})
	}
	if r.Lost != nil {
		saved := ""
		if r.Lost.Saved != "" {
			saved = " (the damaged file is kept as " + r.Lost.Saved + ")"
		}
		out = append(out, gateway.PersistenceIssue{Store: "event_log", Problem: "history_lost", LostAfter: r.Lost.After,
			Message: fmt.Sprintf("history lost after index %d: the event log was damaged%s; the node takes the history back from the master "+
				"when it follows one, or run `skulk doctor --ack-log-loss` on it to go on without what was lost", r.Lost.After, saved)})
	}
	return out
}

// warning is the X-Skulk-Warning text for node's reading ("" when none).
func (r persistReading) warning(node ids.NodeID) string {
	var parts []string
	for _, is := range r.issues() {
		parts = append(parts, fmt.Sprintf("node %s: %s", node, is.Message))
	}
	return strings.Join(parts, "; ")
}

// Persistence tracks this node's own durability. The event log's owner
// (master or follower goroutine) reports its changes through the log's
// OnChange hook; the response journal is read under its own lock; the run
// loop watches for an operator's acknowledgement. Safe for concurrent use.
type Persistence struct {
	// Responses is the response journal, set once the store is open,
	// before Run.
	Responses *responsestore.Store
	logDir    string
	log       *slog.Logger

	mu       sync.Mutex
	logIssue *storeIssue         // guarded by mu
	loss     *eventlog.LossError // guarded by mu
}

// NewPersistence tracks the durability of the event log in logDir.
func NewPersistence(logDir string, log *slog.Logger) *Persistence {
	return &Persistence{logDir: logDir, log: log}
}

// LogOptions are the event log's options as the node configures them.
func (p *Persistence) LogOptions(floor int64) eventlog.Options {
	if floor == config.LogFreeFloorOff {
		floor = eventlog.NoFloor
	}
	log := p.log
	return eventlog.Options{
		FreeSpaceFloor: floor,
		OnDegraded: func(s eventlog.Status) {
			log.Error("the event log stopped writing: decisions are counted and applied but not kept on disk; "+
				"free disk space and the node resumes writing by itself", "cause", s.Cause, "free_bytes", s.FreeBytes, "floor_bytes", s.Floor)
		},
		OnChange: p.LogChanged,
	}
}

// LogChanged is the event log's OnChange hook.
func (p *Persistence) LogChanged(s eventlog.Status) {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.logIssue != nil
	p.logIssue = issueOf(s, p.logDir)
	if was && p.logIssue == nil {
		p.log.Info("the event log writes again: the state was stored as a snapshot, nothing decided meanwhile is lost")
	}
	if p.loss != nil && s.Recovery.Loss == nil {
		p.log.Info("the history the event log had lost was taken back from the master", "lost_after", p.loss.After)
		p.loss = nil
	}
}

// SetLoss records the loss the event log reported when it opened.
func (p *Persistence) SetLoss(loss *eventlog.LossError) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loss = loss
}

// reading is this node's persistence reading now.
func (p *Persistence) reading() persistReading {
	p.mu.Lock()
	r := persistReading{Log: p.logIssue}
	if p.loss != nil {
		r.Lost = &lostIssue{After: p.loss.After, Saved: p.loss.Saved}
	}
	p.mu.Unlock()
	if p.Responses != nil {
		if s, ok := p.Responses.JournalStatus(); ok {
			r.Journal = issueOf(s, p.Responses.Dir())
		}
	}
	return r
}

// Run heals the response journal, watches for the operator's
// acknowledgement of a loss, and publishes the reading when it changes,
// until ctx ends.
func (p *Persistence) Run(ctx context.Context, publish func(key string, value []byte) error) {
	tick := time.NewTicker(persistCheckEvery)
	defer tick.Stop()
	var published []byte
	for {
		if p.Responses != nil {
			if healed, err := p.Responses.Heal(); healed {
				p.log.Info("the response journal writes again")
			} else if err != nil {
				p.log.Warn("the response journal could not resume writing", "err", err)
			}
		}
		p.checkAcknowledged()
		if b, _ := json.Marshal(p.reading()); string(b) != string(published) {
			if err := publish(persistKey, b); err != nil {
				p.log.Warn("cannot publish the persistence reading", "err", err)
			} else {
				published = b
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// checkAcknowledged clears the loss once `skulk doctor --ack-log-loss`
// acknowledged it.
func (p *Persistence) checkAcknowledged() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loss == nil {
		return
	}
	pending, err := eventlog.PendingLoss(nil, p.logDir)
	if err != nil || pending != nil {
		return
	}
	p.log.Warn("the operator acknowledged the event log's lost history: this node goes on without it", "lost_after", p.loss.After)
	p.loss = nil
}

// LogDir is the event log's directory in a node's home.
func LogDir(home string) string { return filepath.Join(home, "raft") }

// LegacyLogDir is where homes of the format before Raft kept the event
// log; a node upgrades it into its first snapshot (upgrade.go).
func LegacyLogDir(home string) string { return filepath.Join(home, "log") }

// PendingLogLoss returns the history the event log in home lost and no
// operator acknowledged, nil when none. It only reads: the node may run.
func PendingLogLoss(home string) (*eventlog.LossError, error) {
	return eventlog.PendingLoss(nil, LogDir(home))
}

// AcknowledgeLogLoss is `skulk doctor --ack-log-loss`: the node in home
// (running or not) goes on without the history its log lost, and its
// health no longer reports it. It returns the loss acknowledged, nil when
// there was none.
func AcknowledgeLogLoss(home string) (*eventlog.LossError, error) {
	return eventlog.AcknowledgeLoss(nil, LogDir(home))
}
