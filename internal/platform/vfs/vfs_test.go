package vfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// impls runs a test against the real filesystem and MemFS, each rooted at a
// fresh directory.
func impls(t *testing.T, f func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Helper()
	t.Run("os", func(t *testing.T) { f(t, vfs.OS{}, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		m := vfs.NewMemFS()
		if err := m.MkdirAll("/d", 0o755); err != nil {
			t.Fatal(err)
		}
		f(t, m, "/d")
	})
}

func writeFile(t *testing.T, fsys vfs.FS, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, fsys vfs.FS, name string) (string, error) {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// TestConformance checks that MemFS behaves like the OS for the operations
// the log uses.
func TestConformance(t *testing.T) {
	impls(t, func(t *testing.T, fsys vfs.FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		writeFile(t, fsys, a, "hello", true)
		f, err := fsys.OpenFile(a, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(" world")); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(8); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("!")); err != nil { // O_APPEND writes at the new end
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if got, _ := readFile(t, fsys, a); got != "hello wo!" {
			t.Fatalf("content = %q, want %q", got, "hello wo!")
		}
		r, err := fsys.Open(a)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if n, err := r.ReadAt(buf, 6); n != 3 || err != io.EOF || string(buf[:n]) != "wo!" {
			t.Fatalf("ReadAt = %d, %v, %q", n, err, buf[:n])
		}
		if fi, err := r.Stat(); err != nil || fi.Size() != 9 {
			t.Fatalf("Stat = %v, %v", fi, err)
		}
		if _, err := r.Write([]byte("x")); err == nil {
			t.Fatal("write to read-only file succeeded")
		}
		r.Close()
		if err := fsys.Rename(a, b); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Stat(a); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat(old) err = %v, want ErrNotExist", err)
		}
		if _, err := fsys.OpenFile(b, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("O_EXCL on existing: %v", err)
		}
		if err := fsys.MkdirAll(filepath.Join(dir, "x", "y"), 0o755); err != nil {
			t.Fatal(err)
		}
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if len(names) != 2 || names[0] != "b" || names[1] != "x" || !ents[1].IsDir() {
			t.Fatalf("ReadDir = %v", names)
		}
		if err := fsys.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Remove(b); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Remove(b); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("second Remove: %v", err)
		}
		if free, err := fsys.FreeBytes(dir); err != nil || free == 0 {
			t.Fatalf("FreeBytes = %d, %v", free, err)
		}
	})
}

func TestMemCrash(t *testing.T) {
	tests := []struct {
		name string
		// run acts on the FS; want is each file's content after a crash
		// ("" with present=false: the file is gone).
		run     func(t *testing.T, m *vfs.MemFS)
		file    string
		want    string
		present bool
	}{
		{
			name: "unsynced_data_lost",
			run: func(t *testing.T, m *vfs.MemFS) {
				writeFile(t, m, "/f", "durable", true)
				mustSyncDir(t, m, "/")
				f, _ := m.OpenFile("/f", os.O_WRONLY|os.O_APPEND, 0)
				f.Write([]byte(" lost"))
				f.Close()
			},
			file: "/f", want: "durable", present: true,
		},
		{
			name: "synced_file_without_syncdir_lost",
			run: func(t *testing.T, m *vfs.MemFS) {
				writeFile(t, m, "/f", "data", true)
			},
			file: "/f",
		},
		{
			name: "rename_not_durable_until_syncdir",
			run: func(t *testing.T, m *vfs.MemFS) {
				writeFile(t, m, "/f", "old", true)
				mustSyncDir(t, m, "/")
				writeFile(t, m, "/tmp", "new", true)
				if err := m.Rename("/tmp", "/f"); err != nil {
					t.Fatal(err)
				}
			},
			file: "/f", want: "old", present: true,
		},
		{
			name: "rename_durable_after_syncdir",
			run: func(t *testing.T, m *vfs.MemFS) {
				writeFile(t, m, "/f", "old", true)
				mustSyncDir(t, m, "/")
				writeFile(t, m, "/tmp", "new", true)
				if err := m.Rename("/tmp", "/f"); err != nil {
					t.Fatal(err)
				}
				mustSyncDir(t, m, "/")
			},
			file: "/f", want: "new", present: true,
		},
		{
			name: "remove_undone_without_syncdir",
			run: func(t *testing.T, m *vfs.MemFS) {
				writeFile(t, m, "/f", "kept", true)
				mustSyncDir(t, m, "/")
				if err := m.Remove("/f"); err != nil {
					t.Fatal(err)
				}
			},
			file: "/f", want: "kept", present: true,
		},
		{
			name: "new_directory_needs_parent_sync",
			run: func(t *testing.T, m *vfs.MemFS) {
				if err := m.MkdirAll("/d", 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, m, "/d/f", "x", true)
				mustSyncDir(t, m, "/d")
			},
			file: "/d/f",
		},
		{
			name: "truncate_unsynced_undone",
			run: func(t *testing.T, m *vfs.MemFS) {
				writeFile(t, m, "/f", "abcdef", true)
				mustSyncDir(t, m, "/")
				f, _ := m.OpenFile("/f", os.O_RDWR, 0)
				f.Truncate(2)
				f.Close()
			},
			file: "/f", want: "abcdef", present: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			tt.run(t, m)
			c := m.Crash()
			got, err := readFile(t, c, tt.file)
			if !tt.present {
				if !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("after crash %s: content %q, err %v; want it gone", tt.file, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("after crash %s = %q, %v; want %q", tt.file, got, err, tt.want)
			}
			// The original is untouched by Crash.
			if _, err := m.Stat(tt.file); tt.name != "remove_undone_without_syncdir" && err != nil {
				t.Fatalf("original lost %s: %v", tt.file, err)
			}
		})
	}
}

func TestMemCrashKeep(t *testing.T) {
	for keep := -1; keep <= 6; keep++ {
		m := vfs.NewMemFS()
		writeFile(t, m, "/f", "abc", true)
		mustSyncDir(t, m, "/")
		f, _ := m.OpenFile("/f", os.O_WRONLY|os.O_APPEND, 0)
		f.Write([]byte("defg"))
		f.Close()
		c := m.CrashKeep(func(extra int) int {
			if extra != 4 {
				t.Errorf("extra = %d, want 4", extra)
			}
			return keep
		})
		got, _ := readFile(t, c, "/f")
		want := "abcdefg"[:3+min(max(keep, 0), 4)]
		if got != want {
			t.Errorf("keep %d: %q, want %q", keep, got, want)
		}
	}
}

func TestFailAfter(t *testing.T) {
	m := vfs.NewMemFS()
	m.SetWriteHook(vfs.FailAfter(5, syscall.ENOSPC))
	f, err := m.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if n, err := f.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("first write = %d, %v", n, err)
	}
	n, err := f.Write([]byte("defg"))
	if n != 2 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("second write = %d, %v; want 2, ENOSPC", n, err)
	}
	if n, err := f.Write([]byte("h")); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("third write = %d, %v; want 0, ENOSPC", n, err)
	}
	if got, _ := readFile(t, m, "/f"); got != "abcde" {
		t.Fatalf("content = %q, want the torn %q", got, "abcde")
	}
}

func TestMemFreeBytes(t *testing.T) {
	m := vfs.NewMemFS()
	if got, _ := m.FreeBytes("/"); got != vfs.DefaultMemFreeBytes {
		t.Fatalf("default FreeBytes = %d", got)
	}
	m.SetFreeBytes(42)
	if got, _ := m.FreeBytes("/"); got != 42 {
		t.Fatalf("FreeBytes = %d, want 42", got)
	}
	if _, err := m.FreeBytes("/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("FreeBytes(missing) err = %v", err)
	}
}

func mustSyncDir(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}
