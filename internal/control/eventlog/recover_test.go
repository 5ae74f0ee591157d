package eventlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
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
		lost   bool   // a loss, not a torn tail
	}{
		{"payload_bit_flip", func(b []byte) []byte { b[rec3+recordPrefix+2] ^= 0x10; return b }, 2, true},
		{"crc_bit_flip", func(b []byte) []byte { b[ends[3]-1] ^= 1; return b }, 2, true},
		{"index_changed", func(b []byte) []byte { b[rec3+11] ^= 1; return b }, 2, true},
		{"length_over_limit", func(b []byte) []byte { binary.BigEndian.PutUint32(b[rec3:], MaxPayload+1); return b }, 2, true},
		{"length_huge", func(b []byte) []byte { binary.BigEndian.PutUint32(b[rec3:], 0xffffffff); return b }, 2, true},
		{"length_grown", func(b []byte) []byte { b[rec3+3] += 100; return b }, 2, true},
		{"last_length_grown", func(b []byte) []byte { b[ends[4]+3] += 1; return b }, 4, true},
		{"zeroed_tail", func(b []byte) []byte { clear(b[rec3:]); return b }, 2, false},
		{"zeros_after_end", func(b []byte) []byte { return append(b, make([]byte, 40)...) }, 5, false},
		{"cut_short", func(b []byte) []byte { return b[:len(b)-3] }, 4, false},
		{"last_record", func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b }, 4, true},
		{"first_record", func(b []byte) []byte { b[headerLen+recordPrefix] ^= 0xff; return b }, 0, true},
		{"out_of_sequence", func(b []byte) []byte {
			// A well-formed record whose index skips ahead: 3 to 8 are missing.
			return appendRecord(b[:ends[2]], 9, []byte("x"))
		}, 2, true},
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
			checkLoss(t, m, l, tt.lost, tt.keep, b)
		})
	}
}

// checkLoss checks that a log reports a loss after index after, keeps the
// damaged file whole, and remembers the loss on the next Open; or, when
// lost is false, that it reports none.
func checkLoss(t *testing.T, m *vfs.MemFS, l *Log, lost bool, after uint64, damaged []byte) {
	t.Helper()
	loss := l.Status().Recovery.Loss
	if !lost {
		if loss != nil {
			t.Fatalf("a torn tail was reported as a loss: %v", loss)
		}
		return
	}
	if loss == nil || loss.After != after || !errors.Is(loss, ErrHistoryLost) || !errors.Is(loss, ErrCorrupt) {
		t.Fatalf("loss = %v, want history lost after %d", loss, after)
	}
	if !strings.HasPrefix(loss.Saved, "events.bin.corrupt-") || !bytes.Equal(readFile(t, m, "/log/"+loss.Saved), damaged) {
		t.Fatalf("damaged file not kept whole: %q", loss.Saved)
	}
	appendRange(t, l, after+1, after+2)
	l.Close()
	l2 := openLog(t, "/log", Options{FS: m})
	if got := l2.Status().Recovery.Loss; got == nil || got.After != after || got.Saved != loss.Saved {
		t.Fatalf("reopened: loss %v, want the one recorded (%v)", got, loss)
	}
	mustReadAll(t, l2, 1, after+2)
	l2.Close()
}

func TestOpenDamagedHeader(t *testing.T) {
	full, _ := smallLog(t, 2)
	tests := []struct {
		name   string
		mutate func(b []byte)
	}{
		{"magic", func(b []byte) { b[0] = 'X' }},
		{"version", func(b []byte) { b[7] = 9 }},
		{"base", func(b []byte) { b[15] ^= 4 }},
		{"header_crc", func(b []byte) { b[19] ^= 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			m.MkdirAll("/log", 0o755)
			b := append([]byte(nil), full...)
			tt.mutate(b)
			writeFile(t, m, "/log/events.bin", b)
			l := openLog(t, "/log", Options{FS: m})
			if l.LastIndex() != 0 || l.Status().Degraded {
				t.Fatalf("status %+v, want a fresh writing log", l.Status())
			}
			asCorruption(t, l.Status().Recovery.Cause)
			checkLoss(t, m, l, true, 0, b)
		})
	}
}

// TestFlipEveryByte flips each byte of a real log in turn (the file
// header, and every record's length, index, payload and CRC) and reopens
// it: Open never fails or panics, keeps exactly the records before the
// damage, and never does so silently: every flip is a recorded loss.
func TestFlipEveryByte(t *testing.T) {
	full, ends := smallLog(t, 6)
	root := t.TempDir()
	for pos := range full {
		dir := filepath.Join(root, strconv.Itoa(pos))
		if err := (vfs.OS{}).MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b := append([]byte(nil), full...)
		b[pos] ^= 1 << (pos % 8)
		writeFile(t, vfs.OS{}, filepath.Join(dir, liveName), b)
		l, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("flip at %d: Open: %v", pos, err)
		}
		var keep uint64 // records wholly before the flipped byte
		for i, e := range ends {
			if e <= int64(pos) {
				keep = uint64(i)
			}
		}
		if pos < headerLen {
			keep = 0
		}
		loss := l.Status().Recovery.Loss
		if l.LastIndex() != keep || loss == nil || loss.After != keep {
			t.Fatalf("flip at %d: LastIndex %d, loss %v; want %d and a loss after it", pos, l.LastIndex(), loss, keep)
		}
		saved, err := os.ReadFile(filepath.Join(dir, loss.Saved))
		if err != nil || !bytes.Equal(saved, b) {
			t.Fatalf("flip at %d: damaged file not kept (%v)", pos, err)
		}
		if keep > 0 {
			mustReadAll(t, l, 1, keep)
		}
		appendRange(t, l, keep+1, keep+1)
		l.Close()
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

// TestLossEnds checks the ways a recorded loss ends: Reset (the history is
// replaced by a master's), AcknowledgeLoss on the open log, and the
// package's AcknowledgeLoss on the directory (the operator's command); and
// that a snapshot at or past the damage means nothing was lost.
func TestLossEnds(t *testing.T) {
	full, ends := smallLog(t, 5)
	damaged := func(t *testing.T, m *vfs.MemFS) []byte {
		b := append([]byte(nil), full...)
		b[ends[2]+recordPrefix] ^= 0xff // record 3
		m.MkdirAll("/log", 0o755)
		writeFile(t, m, "/log/events.bin", b)
		return b
	}
	tests := []struct {
		name string
		end  func(t *testing.T, m *vfs.MemFS, l *Log) *Log
	}{
		{"reset", func(t *testing.T, m *vfs.MemFS, l *Log) *Log {
			if err := l.Reset(9, []byte("master state")); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"acknowledge", func(t *testing.T, m *vfs.MemFS, l *Log) *Log {
			if err := l.AcknowledgeLoss(); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"acknowledge_dir", func(t *testing.T, m *vfs.MemFS, l *Log) *Log {
			l.Close()
			loss, err := AcknowledgeLoss(m, "/log")
			if err != nil || loss == nil || loss.After != 2 {
				t.Fatalf("AcknowledgeLoss = %v, %v", loss, err)
			}
			if again, err := AcknowledgeLoss(m, "/log"); again != nil || err != nil {
				t.Fatalf("second AcknowledgeLoss = %v, %v", again, err)
			}
			return openLog(t, "/log", Options{FS: m})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := vfs.NewMemFS()
			damaged(t, m)
			var changes []Status
			l := openLog(t, "/log", Options{FS: m, OnChange: func(s Status) { changes = append(changes, s) }})
			if p, err := PendingLoss(m, "/log"); err != nil || p == nil || p.After != 2 {
				t.Fatalf("PendingLoss = %v, %v", p, err)
			}
			l = tt.end(t, m, l)
			if tt.name != "acknowledge_dir" && (len(changes) == 0 || changes[len(changes)-1].Recovery.Loss != nil) {
				t.Fatalf("OnChange did not report the end of the loss: %+v", changes)
			}
			if loss := l.Status().Recovery.Loss; loss != nil {
				t.Fatalf("loss still reported: %v", loss)
			}
			if p, _ := PendingLoss(m, "/log"); p != nil {
				t.Fatalf("PendingLoss after the end: %v", p)
			}
			l.Close()
			if loss := openLog(t, "/log", Options{FS: m}).Status().Recovery.Loss; loss != nil {
				t.Fatalf("reopened: loss %v", loss)
			}
		})
	}
	t.Run("snapshot_covers", func(t *testing.T) {
		m := vfs.NewMemFS()
		damaged(t, m)
		writeFile(t, m, "/log/"+snapshotName(5), encodeSnapshot(5, []byte("state at 5")))
		l := openLog(t, "/log", Options{FS: m})
		if loss := l.Status().Recovery.Loss; loss != nil || l.LastIndex() != 5 {
			t.Fatalf("LastIndex %d, loss %v; want 5 from the snapshot and no loss", l.LastIndex(), loss)
		}
		appendRange(t, l, 6, 7)
		mustReadAll(t, l, 6, 7)
	})
}

// TestLossWithoutRoom damages a log on a disk with room for the loss marker
// and no more: the damaged file cannot be kept aside, so it is cut in
// place (which needs no space); the loss is still recorded and reported,
// on this Open and the next.
func TestLossWithoutRoom(t *testing.T) {
	full, ends := smallLog(t, 40)
	m := vfs.NewMemFS()
	m.MkdirAll("/log", 0o755)
	b := append([]byte(nil), full...)
	b[ends[30]+recordPrefix] ^= 0xff // record 31
	writeFile(t, m, "/log/events.bin", b)
	m.SetWriteHook(vfs.FailAfter(400, syscall.ENOSPC))
	l := openLog(t, "/log", Options{FS: m, FreeSpaceFloor: NoFloor})
	loss := l.Status().Recovery.Loss
	if l.LastIndex() != 30 || loss == nil || loss.After != 30 || loss.Saved != "" || !l.Status().Degraded {
		t.Fatalf("LastIndex %d, loss %v, status %+v", l.LastIndex(), loss, l.Status())
	}
	mustReadAll(t, l, 1, 30)
	l.Close()
	if got := int64(len(readFile(t, m, "/log/events.bin"))); got != ends[30] {
		t.Fatalf("events.bin holds %d bytes, want the %d of its good part", got, ends[30])
	}
	m.SetWriteHook(nil)
	l = openLog(t, "/log", Options{FS: m, FreeSpaceFloor: NoFloor})
	if loss := l.Status().Recovery.Loss; l.LastIndex() != 30 || loss == nil || loss.After != 30 {
		t.Fatalf("reopened: LastIndex %d, loss %v", l.LastIndex(), loss)
	}
}
