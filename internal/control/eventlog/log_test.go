package eventlog

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, fc := range fsCases {
		for _, sync := range []SyncPolicy{SyncEveryAppend, SyncManual} {
			t.Run(fc.name+"/sync"+[]string{"Every", "Manual"}[sync], func(t *testing.T) {
				fsys, dir := fc.make(t)
				opts := Options{FS: fsys, Sync: sync}
				l := openLog(t, dir, opts)
				if l.LastIndex() != 0 {
					t.Fatalf("fresh LastIndex = %d", l.LastIndex())
				}
				appendRange(t, l, 1, 200)
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				mustReadAll(t, l, 1, 200)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = openLog(t, dir, opts)
				st := l.Status()
				if st.LastIndex != 200 || st.WrittenIndex != 200 || st.FirstIndex != 1 || st.Degraded {
					t.Fatalf("reopened status = %+v", st)
				}
				if st.Recovery.Records != 200 || st.Recovery.DroppedBytes != 0 {
					t.Fatalf("recovery = %+v", st.Recovery)
				}
				for _, from := range []uint64{1, 2, 63, 64, 65, 129, 200} {
					mustReadAll(t, l, from, 200)
				}
				if got, err := readFrom(t, l, 201); err != nil || got != 200 {
					t.Fatalf("read from 201 = %d, %v; want nothing", got, err)
				}
				appendRange(t, l, 201, 210)
				mustReadAll(t, l, 150, 210)
			})
		}
	}
}

func TestAppendRefusals(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	appendRange(t, l, 1, 3)
	tests := []struct {
		name    string
		index   uint64
		payload []byte
		check   func(error) bool
	}{
		{"gap", 5, nil, func(err error) bool {
			var g *GapError
			return errors.As(err, &g) && g.Want == 4 && g.Got == 5
		}},
		{"repeat", 3, nil, func(err error) bool { var g *GapError; return errors.As(err, &g) }},
		{"zero", 0, nil, func(err error) bool { var g *GapError; return errors.As(err, &g) }},
		{"too_large", 4, make([]byte, MaxPayload+1), func(err error) bool { return errors.Is(err, ErrTooLarge) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := l.Append(tt.index, tt.payload); !tt.check(err) {
				t.Fatalf("Append(%d) = %v", tt.index, err)
			}
			if l.LastIndex() != 3 {
				t.Fatalf("refused append moved LastIndex to %d", l.LastIndex())
			}
		})
	}
	if err := l.Append(4, make([]byte, 0)); err != nil {
		t.Fatalf("empty payload: %v", err)
	}
	l.Close()
	if err := l.Append(5, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if _, err := l.Iterate(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Iterate after Close = %v", err)
	}
}

func TestIterateBounds(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	appendRange(t, l, 1, 10)
	if _, err := l.Iterate(12); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("Iterate(12) = %v, want ErrOutOfRange", err)
	}
	var ce *CompactedError
	if _, err := l.Iterate(0); !errors.As(err, &ce) || ce.First != 1 {
		t.Fatalf("Iterate(0) = %v, want CompactedError", err)
	}
	// An iterator sees records appended after it was created.
	it, err := l.Iterate(9)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { it.Close() })
	var got []uint64
	for it.Next() {
		got = append(got, it.Index())
	}
	appendRange(t, l, 11, 12)
	for it.Next() {
		got = append(got, it.Index())
	}
	if len(got) != 4 || got[0] != 9 || got[3] != 12 || it.Err() != nil {
		t.Fatalf("got %v, err %v", got, it.Err())
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	l := openLog(t, dir, Options{})
	appendRange(t, l, 1, 3)
	l.Close()
	l = openLog(t, dir, Options{})
	if l.LastIndex() != 3 {
		t.Fatalf("LastIndex = %d", l.LastIndex())
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Sync: 7}, {RotateBytes: 3}, {ArchiveCapBytes: -1}, {FreeSpaceFloor: -2},
		{FreeSpaceCheckEvery: -1}, {SnapshotsRetained: -1},
	} {
		if _, err := Open(t.TempDir(), o); err == nil {
			t.Errorf("Open with %+v succeeded", o)
		}
	}
}
