package eventlog

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func archiveNames(t *testing.T, l *Log) []string {
	t.Helper()
	ents, err := l.fs.ReadDir(l.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".bin.zst") {
			names = append(names, e.Name())
		}
	}
	return names
}

func TestRotation(t *testing.T) {
	for _, fc := range fsCases {
		t.Run(fc.name, func(t *testing.T) {
			fsys, dir := fc.make(t)
			opts := Options{FS: fsys, RotateBytes: 1024, Sync: SyncManual}
			l := openLog(t, dir, opts)
			// An iterator opened before rotations follows them.
			appendRange(t, l, 1, 5)
			it, err := l.Iterate(1)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { it.Close() })
			var seen uint64
			for it.Next() {
				seen = it.Index()
			}
			appendRange(t, l, 6, 400)
			for it.Next() {
				if it.Index() != seen+1 {
					t.Fatalf("iterator jumped from %d to %d", seen, it.Index())
				}
				seen = it.Index()
			}
			if it.Err() != nil || seen != 400 {
				t.Fatalf("iterator stopped at %d: %v", seen, it.Err())
			}
			st := l.Status()
			if st.Archives < 10 || st.LiveBytes >= 1024 {
				t.Fatalf("status after 400 appends: %+v", st)
			}
			names := archiveNames(t, l)
			if len(names) != st.Archives {
				t.Fatalf("archives on disk %v, status says %d", names, st.Archives)
			}
			for _, from := range []uint64{1, 17, 200, 399, 400} {
				mustReadAll(t, l, from, 400)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, dir, opts)
			if l.LastIndex() != 400 || l.Status().Archives != st.Archives {
				t.Fatalf("reopened: %+v", l.Status())
			}
			mustReadAll(t, l, 1, 400)
			appendRange(t, l, 401, 450)
			mustReadAll(t, l, 390, 450)
		})
	}
}

func TestArchiveCap(t *testing.T) {
	dir := t.TempDir()
	const capBytes = 2048
	l := openLog(t, dir, Options{RotateBytes: 512, ArchiveCapBytes: capBytes, Sync: SyncManual})
	appendRange(t, l, 1, 1000)
	st := l.Status()
	if st.ArchiveBytes > capBytes || st.Archives == 0 {
		t.Fatalf("archives %d, %d bytes; cap %d", st.Archives, st.ArchiveBytes, capBytes)
	}
	if st.FirstIndex <= 1 {
		t.Fatalf("FirstIndex = %d, nothing deleted", st.FirstIndex)
	}
	// The oldest went first: what is left is the newest, contiguous run.
	names := archiveNames(t, l)
	if want := archiveName(l.nextSeq - 1); names[len(names)-1] != want && !contains(names, want) {
		t.Fatalf("newest archive %s missing from %v", want, names)
	}
	var ce *CompactedError
	if _, err := l.Iterate(1); !errors.As(err, &ce) || ce.First != st.FirstIndex || !errors.Is(err, ErrCompacted) {
		t.Fatalf("Iterate(1) = %v, want CompactedError{First: %d}", err, st.FirstIndex)
	}
	mustReadAll(t, l, st.FirstIndex, 1000)
	l.Close()
	l = openLog(t, dir, Options{RotateBytes: 512, ArchiveCapBytes: capBytes})
	if got := l.Status(); got.FirstIndex != st.FirstIndex || got.LastIndex != 1000 {
		t.Fatalf("reopened: %+v", got)
	}
	mustReadAll(t, l, st.FirstIndex, 1000)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestCorruptArchive(t *testing.T) {
	t.Run("header", func(t *testing.T) {
		// An archive that cannot even be opened takes itself and the older
		// archives out of the history; reads there say compacted.
		dir := t.TempDir()
		l := openLog(t, dir, Options{RotateBytes: 512, Sync: SyncManual})
		appendRange(t, l, 1, 100)
		l.Close()
		name := filepath.Join(dir, archiveName(2))
		b := readFile(t, l.fs, name)
		b[len(b)/2] ^= 0xff
		writeFile(t, l.fs, name, b)
		l = openLog(t, dir, Options{})
		rec := l.Status().Recovery
		if rec.LostArchives != 2 {
			t.Fatalf("LostArchives = %d, want 2", rec.LostArchives)
		}
		asCorruption(t, rec.ArchiveCause)
		if _, err := l.Iterate(1); !errors.Is(err, ErrCompacted) {
			t.Fatalf("Iterate(1) = %v, want ErrCompacted", err)
		}
		mustReadAll(t, l, l.Status().FirstIndex, 100)
	})
	t.Run("body", func(t *testing.T) {
		// Damage deep in a large archive shows up when reading reaches it.
		dir := t.TempDir()
		l := openLog(t, dir, Options{RotateBytes: 4 << 20, Sync: SyncManual})
		big := make([]byte, 64<<10)
		for i := range big {
			big[i] = byte(i * 7919 >> 3)
		}
		var i uint64
		for i = 1; l.Status().Archives == 0; i++ {
			if err := l.Append(i, big); err != nil {
				t.Fatal(err)
			}
		}
		l.Close()
		name := filepath.Join(dir, archiveName(1))
		b := readFile(t, l.fs, name)
		b[len(b)-len(b)/8] ^= 0xff
		writeFile(t, l.fs, name, b)
		l = openLog(t, dir, Options{})
		it, err := l.Iterate(1)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for it.Next() {
			n++
		}
		asCorruption(t, it.Err())
		if n == 0 || uint64(n) >= i-1 {
			t.Fatalf("read %d records before the damage, of %d", n, i-1)
		}
	})
}
