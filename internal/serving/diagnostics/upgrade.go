package diagnostics

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/state"
)

// ReadLegacyLog converts a home written before the control plane ran on
// Raft: when the raft log is empty and the old event log holds history,
// its State becomes the first snapshot of a cluster this node founds. The
// old log stays where it was, never deleted; once the raft log holds
// anything it is not read again (a crash before that converts anew). A damaged old
// log refuses the start with what to do: a node never starts empty over
// history it could not read.
//
// It returns the old log's State, nil when there is nothing to convert.
func ReadLegacyLog(home string, raftLog *eventlog.Log, log *slog.Logger) (*state.State, error) {
	dir := LegacyLogDir(home)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if raftLog.LastIndex() > 0 {
		return nil, nil // converted already; the old directory is left alone
	}
	old, err := eventlog.Open(dir, eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
	if err != nil {
		return nil, fmt.Errorf("node: the home %s holds an event log of the format before Raft that cannot be opened (%w); "+
			"move %s aside to start this node without its history", home, err, dir)
	}
	st, err := recoverLog(old)
	old.Close()
	if err != nil {
		return nil, fmt.Errorf("node: the home %s holds an event log of the format before Raft that cannot be replayed (%w); "+
			"move %s aside to start this node without its history", home, err, dir)
	}
	if st.LastIndex == 0 {
		return nil, nil
	}
	log.Warn("converted the home's event log of the format before Raft: its State is the first snapshot of a cluster this node founds; "+
		"other upgraded members found their own, so start them with an empty raft/ directory and they join this one",
		"index", st.LastIndex, "instances", len(st.Instances), "old_log_kept_in", dir)
	return &st, nil
}

// recoverLog replays a log from its newest snapshot.
func recoverLog(l *eventlog.Log) (state.State, error) {
	idx, blob, err := l.LoadSnapshot()
	switch {
	case errors.Is(err, eventlog.ErrNoSnapshot):
		idx, blob = 0, nil
	case err != nil:
		return state.State{}, fmt.Errorf("load snapshot: %w", err)
	}
	return state.Recover(idx, blob, l.Records)
}
