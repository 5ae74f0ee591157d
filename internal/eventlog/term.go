package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/skulk/skulk/internal/vfs"
)

// Term file format (big-endian), replaced atomically on every change:
//
//	+-----------+-------------+----------+---------+
//	| magic (6) | version (2) | term (8) | CRC (4) |
//	| "SKULKT"  | 1           |          |         |
//	+-----------+-------------+----------+---------+
//	CRC is CRC-32C of the 16 bytes before it.
const (
	termMagic = "SKULKT"
	termLen   = 20
)

// TermStore keeps the highest election term a node has used or seen in a
// file of its own, apart from the log, so that no restart, truncation or
// damage of the log can make the node use a term twice: the next term it
// elects itself in is above both its log's and the stored one. It is safe
// for concurrent use.
type TermStore struct {
	fs   vfs.FS
	path string

	mu  sync.Mutex
	cur uint64 // guarded by mu
}

// TermDamagedError says the term file could not be read. OpenTermStore
// still returns a usable store, at term 0, after keeping the file aside as
// Saved: the caller raises it past every term it can still see (its log's)
// and reports the error.
type TermDamagedError struct {
	Path  string
	Saved string
	Err   error
}

func (e *TermDamagedError) Error() string {
	return fmt.Sprintf("eventlog: the term file %s is damaged (kept as %s): %v", e.Path, e.Saved, e.Err)
}

func (e *TermDamagedError) Unwrap() error { return e.Err }

// OpenTermStore reads the term file at path (term 0 when there is none).
// fsys nil means vfs.OS{}. A damaged file gives a usable store and a
// *TermDamagedError; other errors give no store.
func OpenTermStore(path string, fsys vfs.FS) (*TermStore, error) {
	if fsys == nil {
		fsys = vfs.OS{}
	}
	s := &TermStore{fs: fsys, path: path}
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("eventlog: open the term file: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, termLen+1))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("eventlog: read the term file %s: %w", path, err)
	}
	term, perr := parseTerm(b)
	if perr == nil {
		s.cur = term
		return s, nil
	}
	saved := path + ".damaged"
	if err := fsys.Rename(path, saved); err != nil {
		return nil, fmt.Errorf("eventlog: keep the damaged term file %s aside: %w", path, err)
	}
	return s, &TermDamagedError{Path: path, Saved: saved, Err: perr}
}

func parseTerm(b []byte) (uint64, error) {
	switch {
	case len(b) != termLen:
		return 0, fmt.Errorf("%d bytes, want %d", len(b), termLen)
	case string(b[:6]) != termMagic:
		return 0, fmt.Errorf("bad magic %q", b[:6])
	case binary.BigEndian.Uint16(b[6:8]) != formatVersion:
		return 0, fmt.Errorf("unsupported version %d", binary.BigEndian.Uint16(b[6:8]))
	case binary.BigEndian.Uint32(b[16:]) != crc32.Checksum(b[:16], castagnoli):
		return 0, errors.New("CRC mismatch")
	}
	return binary.BigEndian.Uint64(b[8:16]), nil
}

// Current is the highest term stored.
func (s *TermStore) Current() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Raise stores term when it is above the current one, durably (temporary
// file, fsync, rename, fsync of the directory) before it returns; a lower
// or equal term changes nothing.
func (s *TermStore) Raise(term uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if term <= s.cur {
		return nil
	}
	b := make([]byte, 0, termLen)
	b = append(b, termMagic...)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint64(b, term)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	tmp := s.path + ".tmp"
	f, err := s.fs.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("eventlog: store term %d: %w", term, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, s.path)
	}
	if err == nil {
		err = s.fs.SyncDir(filepath.Dir(s.path))
	}
	if err != nil {
		s.fs.Remove(tmp)
		return fmt.Errorf("eventlog: store term %d in %s: %w", term, s.path, err)
	}
	s.cur = term
	return nil
}
