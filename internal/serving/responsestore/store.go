// Package responsestore keeps the conversations of this node's recent
// Responses API answers, for previous_response_id: in memory, and in a
// journal under the node's home so a conversation outlives a restart.
package responsestore

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/serving/api/responses"
	"github.com/skulk/skulk/internal/serving/request"
)

// The response journal's file bounds: the live file is compressed into an
// archive at journalRotateBytes and archives past journalArchiveBytes (in
// compressed bytes) are deleted oldest first. Together they keep more than
// the store's own bound of text (responses.DefaultStoreBytes), so a restart
// finds every conversation the store held, in about 100 MiB of disk at most.
const (
	journalRotateBytes  = 16 << 20
	journalArchiveBytes = 96 << 20
)

// Store keeps the conversations of this node's recent responses
// for previous_response_id: in memory and, when opened on a directory
// (Open), in a journal there too, so that a conversation can
// be continued after its node restarts. Request goroutines share it; each
// holds mu for one Get or Put, and a Put appends one record to the journal
// (a write to the page cache: no fsync, so a crash of the machine, not of
// the process, can lose the last responses).
type Store struct {
	mu      sync.Mutex
	s       *responses.Store // guarded by mu
	journal *eventlog.Log    // guarded by mu; nil: memory only
	dir     string           // the journal's directory; "" for memory only
	log     *slog.Logger
}

// journalRecord is one journal record: a response's conversation.
type journalRecord struct {
	ID       string            `json:"id"`
	Messages []request.Message `json:"messages"`
}

// New returns a memory-only store with the default bounds
// (responses.DefaultStoreEntries, responses.DefaultStoreBytes).
func New() *Store {
	return &Store{s: responses.NewStore(responses.DefaultStoreEntries, responses.DefaultStoreBytes)}
}

// Open returns a store with the default bounds whose
// conversations are journaled in dir (created if missing), loaded with the
// conversations an earlier process journaled there. A journal whose tail
// was torn by a crash loses that tail, with a warning in log; a journal
// that cannot be written later (a full disk) leaves the store working from
// memory, also with a warning.
func Open(dir string, log *slog.Logger) (*Store, error) {
	// Conversations are the users' words: the directory is the node
	// owner's alone.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the response journal directory: %w", err)
	}
	st := New()
	st.log, st.dir = log, dir
	l, err := eventlog.Open(dir, eventlog.Options{
		Sync: eventlog.SyncManual, RotateBytes: journalRotateBytes, ArchiveCapBytes: journalArchiveBytes,
		// The journal is bounded on its own; a write that fails for space
		// still degrades it.
		FreeSpaceFloor: eventlog.NoFloor,
		Name:           "the response journal",
		OnDegraded: func(s eventlog.Status) {
			log.Warn("the response journal stopped writing: responses made from now on are kept in memory only and do not survive a restart",
				"dir", dir, "cause", s.Cause)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("open the response journal in %s: %w", dir, err)
	}
	if rec := l.Status().Recovery; rec.Cause != nil || rec.ArchiveCause != nil {
		log.Warn("the response journal was damaged: the conversations in the damaged part are lost", "dir", dir,
			"dropped_bytes", rec.DroppedBytes, "cause", rec.Cause, "lost_archives", rec.LostArchives, "archive_cause", rec.ArchiveCause,
			"loss", rec.Loss)
		// The warning is all a lost conversation calls for: unlike the
		// event log's, the journal's losses need no acknowledgement.
		if err := l.AcknowledgeLoss(); err != nil {
			log.Warn("cannot clear the response journal's loss marker", "dir", dir, "err", err)
		}
	}
	if err := st.load(l); err != nil {
		l.Close()
		return nil, fmt.Errorf("read the response journal in %s: %w", dir, err)
	}
	st.journal = l
	return st, nil
}

// load puts every retained record of l into the store, oldest first, so
// that the store's bounds evict what they evicted before.
func (st *Store) load(l *eventlog.Log) error {
	s := l.Status()
	if s.LastIndex < s.FirstIndex || s.LastIndex == 0 {
		return nil
	}
	it, err := l.Iterate(s.FirstIndex)
	if err != nil {
		return err
	}
	defer it.Close()
	skipped := 0
	for it.Next() {
		var rec journalRecord
		if err := json.Unmarshal(it.Payload(), &rec); err != nil || rec.ID == "" {
			skipped++ // a record this version cannot read: that conversation is lost
			continue
		}
		st.s.Put(rec.ID, rec.Messages)
	}
	if skipped > 0 {
		st.log.Warn("response journal records could not be read and were skipped", "records", skipped)
	}
	return it.Err()
}

// Get returns the conversation stored under id, if this node holds it.
func (st *Store) Get(id string) ([]request.Message, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.s.Get(id)
}

func (st *Store) Put(id string, msgs []request.Message) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.s.Put(id, msgs) || st.journal == nil {
		return
	}
	b, err := json.Marshal(journalRecord{ID: id, Messages: msgs})
	if err == nil {
		err = st.journal.Append(st.journal.LastIndex()+1, b)
	}
	if errors.Is(err, eventlog.ErrTooLarge) {
		st.log.Warn("a response's conversation is too large for the response journal: it is kept in memory only", "response", id, "bytes", len(b))
	} else if err != nil {
		st.log.Warn("cannot journal a response: it is kept in memory only", "response", id, "cause", err)
	}
}

// Dir is the journal's directory ("" for a store in memory only).
func (st *Store) Dir() string { return st.dir }

// JournalStatus reports the journal's state; ok is false for a store
// that keeps nothing on disk.
func (st *Store) JournalStatus() (s eventlog.Status, ok bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.journal == nil {
		return eventlog.Status{}, false
	}
	return st.journal.Status(), true
}

// Heal is the journal's periodic disk check (see eventlog.Log.Heal): a
// journal that stopped writing for want of space starts again once the
// disk has room, and journals every conversation the store holds, so a
// restart finds those made meanwhile too. It reports whether the journal
// resumed writing.
func (st *Store) Heal() (bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.journal == nil || !st.journal.Status().Degraded {
		return false, nil
	}
	// The journal's history is the store's content: its snapshot is empty
	// and the conversations follow it as records.
	if err := st.journal.Heal(func() ([]byte, error) { return nil, nil }); err != nil || st.journal.Status().Degraded {
		return false, err
	}
	var err error
	st.s.Each(func(id string, msgs []request.Message) {
		if err != nil {
			return
		}
		var b []byte
		if b, err = json.Marshal(journalRecord{ID: id, Messages: msgs}); err == nil {
			err = st.journal.Append(st.journal.LastIndex()+1, b)
		}
	})
	if err == nil {
		err = st.journal.Sync()
	}
	return err == nil && !st.journal.Status().Degraded, err
}

// Close flushes the journal to disk and closes it; the store then keeps
// working from memory.
func (st *Store) Close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.journal == nil {
		return nil
	}
	err := errors.Join(st.journal.Sync(), st.journal.Close())
	st.journal = nil
	return err
}
