package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// payloadFor is record i's payload: deterministic, of varying length.
func payloadFor(i uint64) []byte {
	return []byte(fmt.Sprintf("event-%d:%s", i, bytes.Repeat([]byte{byte('a' + i%26)}, int(i%37))))
}

// fsCase is a filesystem to run a test on: the real disk or MemFS.
type fsCase struct {
	name string
	make func(t *testing.T) (vfs.FS, string)
}

var fsCases = []fsCase{
	{"os", func(t *testing.T) (vfs.FS, string) { return vfs.OS{}, t.TempDir() }},
	{"mem", func(t *testing.T) (vfs.FS, string) { return vfs.NewMemFS(), "/log" }},
}

func openLog(t *testing.T, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func appendRange(t *testing.T, l *Log, from, to uint64) {
	t.Helper()
	for i := from; i <= to; i++ {
		if err := l.Append(i, payloadFor(i)); err != nil {
			t.Fatalf("Append(%d): %v", i, err)
		}
	}
}

// readFrom reads every record from index from and checks their payloads; it
// returns the last index read and the iterator's error.
func readFrom(t *testing.T, l *Log, from uint64) (uint64, error) {
	t.Helper()
	it, err := l.Iterate(from)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	want := from
	for it.Next() {
		if it.Index() != want {
			t.Fatalf("iterator gave index %d, want %d", it.Index(), want)
		}
		if !bytes.Equal(it.Payload(), payloadFor(want)) {
			t.Fatalf("record %d payload %q, want %q", want, it.Payload(), payloadFor(want))
		}
		want++
	}
	return want - 1, it.Err()
}

// mustReadAll checks that records from..last read back whole.
func mustReadAll(t *testing.T, l *Log, from, last uint64) {
	t.Helper()
	got, err := readFrom(t, l, from)
	if err != nil {
		t.Fatalf("read from %d: %v", from, err)
	}
	if got != last {
		t.Fatalf("read from %d ended at %d, want %d", from, got, last)
	}
}

func readFile(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, fsys vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func asCorruption(t *testing.T, err error) *CorruptionError {
	t.Helper()
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v (%T) is not a *CorruptionError", err, err)
	}
	return ce
}
