package dataplane

import (
	"fmt"
	"slices"
)

// span is a byte range [off, off+len) of the arena.
type span struct{ off, len uint64 }

func (s span) end() uint64 { return s.off + s.len }

// freeList is the arena's free space: sorted, non-adjacent spans. It is a
// plain value with no locking; the ArenaManager goroutine owns it.
type freeList struct {
	spans []span
}

func newFreeList(off, n uint64) freeList {
	return freeList{spans: []span{{off, n}}}
}

// take removes n bytes from the first span that holds them.
func (f *freeList) take(n uint64) (uint64, bool) {
	for i, s := range f.spans {
		if s.len < n {
			continue
		}
		if s.len == n {
			f.spans = slices.Delete(f.spans, i, i+1)
		} else {
			f.spans[i] = span{s.off + n, s.len - n}
		}
		return s.off, true
	}
	return 0, false
}

// put returns a span, merging neighbours; overlap with free space is a
// double release and is refused.
func (f *freeList) put(r span) error {
	i, _ := slices.BinarySearchFunc(f.spans, r.off, func(s span, off uint64) int {
		switch {
		case s.off < off:
			return -1
		case s.off > off:
			return 1
		}
		return 0
	})
	if (i > 0 && f.spans[i-1].end() > r.off) || (i < len(f.spans) && r.end() > f.spans[i].off) {
		return fmt.Errorf("dataplane: span [%d,+%d) overlaps free space", r.off, r.len)
	}
	f.spans = slices.Insert(f.spans, i, r)
	if i+1 < len(f.spans) && f.spans[i].end() == f.spans[i+1].off {
		f.spans[i].len += f.spans[i+1].len
		f.spans = slices.Delete(f.spans, i+1, i+2)
	}
	if i > 0 && f.spans[i-1].end() == f.spans[i].off {
		f.spans[i-1].len += f.spans[i].len
		f.spans = slices.Delete(f.spans, i, i+1)
	}
	return nil
}

func (f *freeList) free() uint64 {
	var n uint64
	for _, s := range f.spans {
		n += s.len
	}
	return n
}
