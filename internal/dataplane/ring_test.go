//go:build linux

package dataplane

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
)

func TestRingOpenRejectsBadHeaders(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(b []byte, l *RingLayout)
		want   RingFaultReason
	}{
		{"bad_magic", func(b []byte, _ *RingLayout) { b[0] ^= 1 }, RingLayoutInvalid},
		{"future_version", func(b []byte, _ *RingLayout) { binary.LittleEndian.PutUint16(b[4:], 2) }, UnsupportedRingVersion},
		{"header_len", func(b []byte, _ *RingLayout) { binary.LittleEndian.PutUint16(b[6:], 128) }, RingLayoutInvalid},
		{"wrong_ring_id", func(b []byte, _ *RingLayout) { binary.LittleEndian.PutUint64(b[8:], 99) }, RingLayoutInvalid},
		{"capacity_mismatch", func(b []byte, _ *RingLayout) { binary.LittleEndian.PutUint64(b[16:], 1) }, RingLayoutInvalid},
		{"commit_beyond_capacity", func(b []byte, _ *RingLayout) { binary.LittleEndian.PutUint64(b[offCommit:], 1<<20) }, RingStateInvalid},
		{"consume_ahead_of_commit", func(b []byte, _ *RingLayout) { binary.LittleEndian.PutUint64(b[offConsume:], 8) }, RingStateInvalid},
		{"layout_outside_arena", func(_ []byte, l *RingLayout) { l.DataCapacity = 1 << 30 }, RingLayoutInvalid},
		{"layout_unaligned", func(_ []byte, l *RingLayout) { l.DataOffset++ }, RingLayoutInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRingFixture(t, 4096)
			l := f.layout
			tt.mutate(f.arena.Bytes()[l.HeaderOffset:], &l)
			_, err := OpenConsumer(f.arena.Bytes(), l, f.readable, f.writable)
			var rf *RingFaultError
			if !errors.As(err, &rf) || rf.Reason != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
}

// TestRingWakeLiveness ping-pongs one byte at a time through a one-slot-
// sized ring so every step is an empty->readable and full->writable
// transition with both sides asleep; a lost wake hangs and hits the timeout.
func TestRingWakeLiveness(t *testing.T) {
	f := newRingFixture(t, 64)
	p, c := openPair(t, f)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const rounds = 20000
	errc := make(chan error, 1)
	go func() {
		for i := range rounds {
			if err := p.Write(ctx, []byte{byte(i)}); err != nil {
				errc <- err
				return
			}
			if i%997 == 0 {
				time.Sleep(100 * time.Microsecond) // let the consumer fall asleep
			}
		}
		errc <- p.Close()
	}()
	var b [1]byte
	for i := range rounds {
		if _, err := c.Read(ctx, b[:]); err != nil {
			t.Fatalf("read %d: %v (a lost wake-up ends here)", i, err)
		}
		if b[0] != byte(i) {
			t.Fatalf("read %d got %d", i, b[0])
		}
		if i%1009 == 0 {
			time.Sleep(100 * time.Microsecond) // let the producer fill and sleep
		}
	}
	if _, err := c.Read(ctx, b[:]); err != io.EOF {
		t.Fatalf("after close: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestRingCancelAndPeerClose(t *testing.T) {
	f := newRingFixture(t, 64)
	p, c := openPair(t, f)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := c.WaitReadable(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on empty ring: %v", err)
	}
	if err := p.Write(t.Context(), make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.WaitWritable(t.Context()) }()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrRingClosed) {
		t.Fatalf("producer after consumer close: %v", err)
	}
}
