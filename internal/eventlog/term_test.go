package eventlog

import (
	"errors"
	"syscall"
	"testing"

	"github.com/skulk/skulk/internal/vfs"
)

func TestTermStore(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, m *vfs.MemFS) (*vfs.MemFS, uint64) // the disk to reopen and the term it must hold
	}{
		{"missing", func(t *testing.T, m *vfs.MemFS) (*vfs.MemFS, uint64) { return m, 0 }},
		{"raised", func(t *testing.T, m *vfs.MemFS) (*vfs.MemFS, uint64) {
			s := mustTerms(t, m)
			for _, term := range []uint64{3, 7, 5, 7} {
				if err := s.Raise(term); err != nil {
					t.Fatal(err)
				}
			}
			if s.Current() != 7 {
				t.Fatalf("Current %d", s.Current())
			}
			return m, 7
		}},
		{"durable_across_a_crash", func(t *testing.T, m *vfs.MemFS) (*vfs.MemFS, uint64) {
			if err := mustTerms(t, m).Raise(9); err != nil {
				t.Fatal(err)
			}
			return m.Crash(), 9
		}},
		{"disk_full", func(t *testing.T, m *vfs.MemFS) (*vfs.MemFS, uint64) {
			s := mustTerms(t, m)
			s.Raise(4)
			m.SetWriteHook(vfs.FailAfter(0, syscall.ENOSPC))
			if err := s.Raise(6); !vfs.IsNoSpace(err) || s.Current() != 4 {
				t.Fatalf("Raise on a full disk: %v, Current %d", err, s.Current())
			}
			m.SetWriteHook(nil)
			return m, 4
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			m.MkdirAll("/home", 0o755)
			m.SyncDir("/")
			m, want := tt.run(t, m)
			if got := mustTerms(t, m).Current(); got != want {
				t.Fatalf("reopened at term %d, want %d", got, want)
			}
		})
	}
	t.Run("damaged", func(t *testing.T) {
		m := vfs.NewMemFS()
		m.MkdirAll("/home", 0o755)
		mustTerms(t, m).Raise(12)
		b := readFile(t, m, "/home/term")
		b[10] ^= 1
		writeFile(t, m, "/home/term", b)
		s, err := OpenTermStore("/home/term", m)
		var de *TermDamagedError
		if !errors.As(err, &de) || s == nil || s.Current() != 0 {
			t.Fatalf("OpenTermStore on a damaged file: %v", err)
		}
		if got := readFile(t, m, de.Saved); string(got) != string(b) {
			t.Fatal("the damaged term file was not kept aside")
		}
		if err := s.Raise(13); err != nil {
			t.Fatal(err)
		}
		if got := mustTerms(t, m).Current(); got != 13 {
			t.Fatalf("after raising past the damage: %d", got)
		}
	})
}

func mustTerms(t *testing.T, m *vfs.MemFS) *TermStore {
	t.Helper()
	s, err := OpenTermStore("/home/term", m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
