package eventlog

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/skulk/skulk/internal/vfs"
)

// smallLog writes records 1..n to a fresh log and returns the live file's
// bytes and the end offset of each record.
func smallLog(t *testing.T, n uint64) ([]byte, []int64) {
	t.Helper()
	m := vfs.NewMemFS()
	l := openLog(t, "/log", Options{FS: m})
	ends := []int64{headerLen}
	for i := uint64(1); i <= n; i++ {
		appendRange(t, l, i, i)
		ends = append(ends, l.Status().LiveBytes)
	}
	l.Close()
	return readFile(t, m, "/log/events.bin"), ends
}

// TestRecoverTruncatedEveryOffset cuts a log at every byte offset, on the
// real disk, and checks that Open keeps exactly the whole records before the
// cut, truncates the rest, and that the log then works.
func TestRecoverTruncatedEveryOffset(t *testing.T) {
	full, ends := smallLog(t, 5)
	root := t.TempDir()
	for cut := 0; cut <= len(full); cut++ {
		dir := filepath.Join(root, "cut", strconv.Itoa(cut))
		if err := (vfs.OS{}).MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, vfs.OS{}, filepath.Join(dir, liveName), full[:cut])
		l, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("cut %d: Open: %v", cut, err)
		}
		var whole uint64
		good := int64(0)
		for i, e := range ends {
			if e <= int64(cut) {
				whole, good = uint64(i), e
			}
		}
		if cut < headerLen {
			good = 0
		}
		rec := l.Status().Recovery
		if l.LastIndex() != whole || rec.DroppedBytes != int64(cut)-good {
			t.Fatalf("cut %d: LastIndex %d, dropped %d; want %d, %d", cut, l.LastIndex(), rec.DroppedBytes, whole, int64(cut)-good)
		}
		if rec.DroppedBytes > 0 && !asCorruption(t, rec.Cause).Torn {
			t.Fatalf("cut %d: cause %v not marked torn", cut, rec.Cause)
		}
		mustReadAll(t, l, 1, whole)
		appendRange(t, l, whole+1, whole+2)
		l.Close()
		l, err = Open(dir, Options{})
		if err != nil {
			t.Fatalf("cut %d: reopen: %v", cut, err)
		}
		if l.LastIndex() != whole+2 || l.Status().Recovery.DroppedBytes != 0 {
			t.Fatalf("cut %d: reopened at %d with %+v", cut, l.LastIndex(), l.Status().Recovery)
		}
		mustReadAll(t, l, 1, whole+2)
		l.Close()
	}
}

func TestRecoverCorruption(t *testing.T) {
	full, ends := smallLog(t, 5)
	rec3 := ends[2] // record 3 starts here
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		keep   uint64 // records kept
	}{
		{"payload_bit_flip", func(b []byte) []byte { b[rec3+recordPrefix+2] ^= 0x10; return b }, 2},
		{"crc_bit_flip", func(b []byte) []byte { b[ends[3]-1] ^= 1; return b }, 2},
		{"index_changed", func(b []byte) []byte { b[rec3+11] ^= 1; return b }, 2},
		{"length_over_limit", func(b []byte) []byte { binary.BigEndian.PutUint32(b[rec3:], MaxPayload+1); return b }, 2},
		{"length_huge", func(b []byte) []byte { binary.BigEndian.PutUint32(b[rec3:], 0xffffffff); return b }, 2},
		{"zeroed_tail", func(b []byte) []byte { clear(b[rec3:]); return b }, 2},
		{"last_record", func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b }, 4},
		{"first_record", func(b []byte) []byte { b[headerLen+recordPrefix] ^= 0xff; return b }, 0},
		{"out_of_sequence", func(b []byte) []byte {
			// A well-formed record whose index skips ahead.
			return appendRecord(b[:ends[2]], 9, []byte("x"))
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			m.MkdirAll("/log", 0o755)
			b := tt.mutate(append([]byte(nil), full...))
			writeFile(t, m, "/log/events.bin", b)
			l := openLog(t, "/log", Options{FS: m})
			rec := l.Status().Recovery
			if l.LastIndex() != tt.keep {
				t.Fatalf("LastIndex = %d, want %d", l.LastIndex(), tt.keep)
			}
			if want := int64(len(b)) - ends[tt.keep]; rec.DroppedBytes != want {
				t.Fatalf("DroppedBytes = %d, want %d", rec.DroppedBytes, want)
			}
			ce := asCorruption(t, rec.Cause)
			if ce.Offset != ends[tt.keep] {
				t.Fatalf("corruption at %d, want %d (%v)", ce.Offset, ends[tt.keep], ce)
			}
			mustReadAll(t, l, 1, tt.keep)
			if got := int64(len(readFile(t, m, "/log/events.bin"))); got != ends[tt.keep] {
				t.Fatalf("file not truncated: %d bytes, want %d", got, ends[tt.keep])
			}
		})
	}
}

func TestOpenRefusesForeignHeader(t *testing.T) {
	full, _ := smallLog(t, 2)
	tests := []struct {
		name   string
		mutate func(b []byte)
	}{
		{"magic", func(b []byte) { b[0] = 'X' }},
		{"version", func(b []byte) { b[7] = 9 }},
		{"header_crc", func(b []byte) { b[12] ^= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			m.MkdirAll("/log", 0o755)
			b := append([]byte(nil), full...)
			tt.mutate(b)
			writeFile(t, m, "/log/events.bin", b)
			_, err := Open("/log", Options{FS: m})
			asCorruption(t, err)
			if got := readFile(t, m, "/log/events.bin"); len(got) != len(b) {
				t.Fatal("Open modified a file it refused")
			}
		})
	}
}

func TestRecoverRemovesTempFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, vfs.OS{}, filepath.Join(dir, "events.7.bin.zst.tmp"), []byte("partial"))
	l := openLog(t, dir, Options{})
	if _, err := (vfs.OS{}).Stat(filepath.Join(dir, "events.7.bin.zst.tmp")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temp file left: %v", err)
	}
	appendRange(t, l, 1, 2)
}
