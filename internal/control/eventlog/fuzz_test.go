package eventlog

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// fuzzSeeds are live files: whole, cut, and damaged.
func fuzzSeeds(f *testing.F) [][]byte {
	f.Helper()
	var live []byte
	live = appendHeader(live, 1)
	for i := uint64(1); i <= 4; i++ {
		live = appendRecord(live, i, payloadFor(i))
	}
	flipped := bytes.Clone(live)
	flipped[headerLen+recordPrefix+1] ^= 0x40
	huge := bytes.Clone(live)
	copy(huge[headerLen:], []byte{0xff, 0xff, 0xff, 0xff})
	return [][]byte{
		nil, live, live[:headerLen], live[:headerLen-1], live[:len(live)-1], live[:headerLen+5],
		flipped, huge, appendRecord(appendHeader(nil, 7), 9, nil),
		appendHeader(nil, 1<<63),
	}
}

// FuzzDecoder: any bytes decode to records or a typed error, never a panic,
// and every record decoded re-encodes to exactly the bytes it came from.
func FuzzDecoder(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d := decoder{r: bytes.NewReader(data), name: "fuzz", limit: int64(len(data))}
		for {
			start := d.off
			index, payload, err := d.next()
			if err == io.EOF {
				if d.off != int64(len(data)) {
					t.Fatalf("clean end at %d of %d", d.off, len(data))
				}
				return
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("untyped error %v", err)
				}
				return
			}
			if got := appendRecord(nil, index, payload); !bytes.Equal(got, data[start:d.off]) {
				t.Fatalf("record %d re-encodes differently", index)
			}
		}
	})
}

// FuzzOpen: Open on any live file either refuses it with a *CorruptionError
// or recovers a log that reads back whole and reopens with nothing dropped.
func FuzzOpen(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := vfs.NewMemFS()
		m.MkdirAll("/log", 0o755)
		writeFile(t, m, "/log/events.bin", data)
		l, err := Open("/log", Options{FS: m})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Open: untyped error %v", err)
			}
			return
		}
		st := l.Status()
		if st.Recovery.DroppedBytes < 0 || st.Recovery.DroppedBytes > int64(len(data)) {
			t.Fatalf("dropped %d of %d bytes", st.Recovery.DroppedBytes, len(data))
		}
		it, err := l.Iterate(st.FirstIndex)
		if err != nil {
			t.Fatal(err)
		}
		n := uint64(0)
		for it.Next() {
			n++
		}
		if it.Err() != nil || n != st.Recovery.Records {
			t.Fatalf("read %d records (%v), recovery kept %d", n, it.Err(), st.Recovery.Records)
		}
		it.Close()
		l.Close()
		l, err = Open("/log", Options{FS: m})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l.Close()
		if got := l.Status(); got.LastIndex != st.LastIndex || got.Recovery.DroppedBytes != 0 {
			t.Fatalf("reopen: %+v, first open %+v", got, st)
		}
	})
}
