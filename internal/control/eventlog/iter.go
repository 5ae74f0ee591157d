package eventlog

import (
	"bufio"
	"fmt"
	"io"
	"iter"
	"sort"

	"github.com/klauspost/compress/zstd"

	"github.com/skulk/skulk/internal/platform/vfs"
)

// Iterator reads records in index order across the archives and the live
// file. It is not safe for concurrent use, and belongs to the goroutine that
// owns its Log:
//
//	it, err := l.Iterate(from)
//	...
//	defer it.Close()
//	for it.Next() {
//		use(it.Index(), it.Payload())
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	l      *Log
	next   uint64 // index the next record must have
	layout uint64 // l.layout when src was positioned
	src    *decoder
	file   vfs.File // the archive being read; nil in the live file
	inLive bool
	end    uint64 // in an archive: the index after its last record
	zdec   *zstd.Decoder

	index   uint64
	payload []byte
	err     error
}

// Iterate returns an Iterator over the records from index from onwards,
// including any appended while it is open. A from older than the retained
// history gives a *CompactedError (load the snapshot instead); a from past
// LastIndex()+1 gives ErrOutOfRange.
func (l *Log) Iterate(from uint64) (*Iterator, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if first := l.firstIndex(); from < first {
		return nil, &CompactedError{Index: from, First: first}
	}
	if from > l.last+1 {
		return nil, fmt.Errorf("%w: %d, last index %d", ErrOutOfRange, from, l.last)
	}
	return &Iterator{l: l, next: from}, nil
}

// Records yields the payloads of the records from index from to the last,
// in order, and stops at the first error, which it yields. It is Iterate
// for a range loop (state.Recover reads a log through it); the payloads are
// valid only until the loop goes on.
func (l *Log) Records(from uint64) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		it, err := l.Iterate(from)
		if err != nil {
			yield(nil, err)
			return
		}
		defer it.Close()
		for it.Next() {
			if !yield(it.Payload(), nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// Next advances to the next record. It returns false at the end of the log
// or on an error, which Err then returns.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	l := it.l
	if l.closed {
		it.err = ErrClosed
		return false
	}
	for {
		if it.next > l.last {
			return false
		}
		if it.next > l.written {
			it.err = fmt.Errorf("%w: index %d (written through %d)", ErrNotWritten, it.next, l.written)
			return false
		}
		if it.src == nil || it.layout != l.layout {
			if it.err = it.seek(); it.err != nil {
				return false
			}
		}
		off := it.src.off
		index, payload, err := it.src.next()
		if err == io.EOF && !it.inLive && it.next == it.end {
			it.closeFile() // on to the next segment
			continue
		}
		if err == io.EOF {
			err = &CorruptionError{File: it.src.name, Offset: off, Reason: fmt.Sprintf("ends before index %d", it.next)}
		}
		if err != nil {
			it.err = zstdCorrupt(it.src.name, off, err)
			return false
		}
		if index < it.next {
			continue // skipping from the seek point to it.next
		}
		if index != it.next {
			it.err = &CorruptionError{File: it.src.name, Offset: off, Reason: fmt.Sprintf("record index %d, want %d", index, it.next)}
			return false
		}
		it.index, it.payload = index, payload
		it.next++
		return true
	}
}

// Index is the current record's index.
func (it *Iterator) Index() uint64 { return it.index }

// Payload is the current record's payload, valid until the next call to Next.
func (it *Iterator) Payload() []byte { return it.payload }

// Err is the error that stopped the iteration, if any.
func (it *Iterator) Err() error { return it.err }

// Close releases the iterator's files.
func (it *Iterator) Close() error {
	it.closeFile()
	if it.zdec != nil {
		it.zdec.Close()
		it.zdec = nil
	}
	if it.err == nil {
		it.err = ErrClosed
	}
	return nil
}

func (it *Iterator) closeFile() {
	if it.file != nil {
		it.file.Close()
		it.file = nil
	}
	it.src = nil
}

// seek positions the iterator at the segment holding it.next.
func (it *Iterator) seek() error {
	it.closeFile()
	l := it.l
	it.layout = l.layout
	if first := l.firstIndex(); it.next < first {
		return &CompactedError{Index: it.next, First: first}
	}
	if it.next >= l.liveBase {
		k := int((it.next - l.liveBase) / sparseStride)
		off := int64(headerLen)
		if k < len(l.sparse) {
			off = l.sparse[k]
		} else if len(l.sparse) > 0 {
			off = l.sparse[len(l.sparse)-1]
		}
		lr := &liveReader{l: l, off: off}
		it.src = &decoder{r: bufio.NewReaderSize(lr, 1<<16), name: liveName, off: off, limit: -1}
		it.inLive = true
		return nil
	}
	i := sort.Search(len(l.archives), func(i int) bool { return l.archives[i].base > it.next }) - 1
	if it.zdec == nil {
		zd, err := newDecoder()
		if err != nil {
			return fmt.Errorf("eventlog: zstd: %w", err)
		}
		it.zdec = zd
	}
	d, base, f, err := l.openArchive(l.archives[i], it.zdec)
	if err != nil {
		return err
	}
	if base != l.archives[i].base {
		f.Close()
		return &CorruptionError{File: d.name, Reason: fmt.Sprintf("base index %d, was %d on open", base, l.archives[i].base)}
	}
	it.src, it.file, it.inLive, it.end = d, f, false, l.segmentEnd(i)
	return nil
}

// liveReader reads the live file's whole records: it stops at l.liveSize, so
// it sees appends made after it was created but never a torn tail.
type liveReader struct {
	l   *Log
	off int64
}

func (r *liveReader) Read(p []byte) (int, error) {
	n := min(int64(len(p)), r.l.liveSize-r.off)
	if n <= 0 || r.l.live == nil {
		return 0, io.EOF
	}
	m, err := r.l.live.ReadAt(p[:n], r.off)
	r.off += int64(m)
	if err == io.EOF && int64(m) == n {
		err = nil
	}
	return m, err
}
