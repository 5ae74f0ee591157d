//go:build linux

package dataplane

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// splitmix64 gives every 8-byte word of the test stream a distinct value, so
// a lost, duplicated or reordered byte (even by a whole ring capacity) shows.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func patternByte(pos uint64) byte { return byte(splitmix64(pos>>3) >> (8 * (pos & 7))) }

func fillPattern(dst []byte, pos uint64) {
	for i := range dst {
		dst[i] = patternByte(pos + uint64(i))
	}
}

func checkPattern(src []byte, pos uint64) error {
	for i, b := range src {
		if want := patternByte(pos + uint64(i)); b != want {
			return fmt.Errorf("byte at stream offset %d is %#x, want %#x", pos+uint64(i), b, want)
		}
	}
	return nil
}

// ringFixture is one ring in a fresh arena with its two doorbells.
type ringFixture struct {
	arena              *Arena
	layout             RingLayout
	readable, writable *Doorbell
}

func newRingFixture(t testing.TB, capacity uint64) *ringFixture {
	t.Helper()
	size := alignUp(RingFootprint(capacity)+4096, uint64(os.Getpagesize()))
	arena, err := NewArena("ring-test", size)
	if err != nil {
		t.Fatal(err)
	}
	f := &ringFixture{arena: arena, layout: NewRingLayout(7, 4096, capacity)}
	if err := InitRing(arena.Bytes(), f.layout); err != nil {
		t.Fatal(err)
	}
	if f.readable, err = NewDoorbell(); err != nil {
		t.Fatal(err)
	}
	if f.writable, err = NewDoorbell(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.readable.Close()
		f.writable.Close()
		arena.Close()
	})
	return f
}

// childFiles returns the fds a child needs: arena, readable, writable.
func (f *ringFixture) childFiles(t testing.TB) []*os.File {
	t.Helper()
	rd, err := f.readable.File()
	if err != nil {
		t.Fatal(err)
	}
	wr, err := f.writable.File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close(); wr.Close() })
	return []*os.File{f.arena.File(), rd, wr}
}

// produceRandom streams total pattern bytes in random chunks with random
// pauses and partial commits; it returns the bitmap of offset-within-chunk
// classes (mod 64) at which a chunk wrapped around the physical end.
func produceRandom(ctx context.Context, p *Producer, total uint64, capacity uint64, rng *rand.Rand) (uint64, error) {
	var pos, wraps uint64
	for pos < total {
		chunk := min(1+rng.Uint64N(capacity+capacity/2), total-pos)
		for done := uint64(0); done < chunk; {
			span, err := p.Reserve()
			if err != nil {
				return wraps, err
			}
			if len(span) == 0 {
				if err := p.WaitWritable(ctx); err != nil {
					return wraps, err
				}
				continue
			}
			n := min(uint64(len(span)), chunk-done)
			if rng.IntN(4) == 0 {
				n = 1 + rng.Uint64N(n) // partial commit of a reserved span
			}
			fillPattern(span[:n], pos)
			if err := p.Commit(int(n)); err != nil {
				return wraps, err
			}
			pos += n
			done += n
			if pos%capacity == 0 && done < chunk {
				wraps |= 1 << (done % 64)
			}
		}
		switch rng.IntN(256) {
		case 0:
			time.Sleep(time.Duration(rng.IntN(20)) * time.Microsecond)
		case 1, 2, 3:
			runtime.Gosched()
		}
	}
	return wraps, p.Close()
}

// consumeRandom drains and verifies the pattern stream until EOF.
func consumeRandom(ctx context.Context, c *Consumer, rng *rand.Rand) (uint64, error) {
	var pos uint64
	for {
		if err := c.WaitReadable(ctx); err != nil {
			return pos, err
		}
		span, err := c.Peek()
		if err == io.EOF {
			return pos, nil
		}
		if err != nil {
			return pos, err
		}
		n := len(span)
		if rng.IntN(2) == 0 {
			n = 1 + rng.IntN(n)
		}
		if err := checkPattern(span[:n], pos); err != nil {
			return pos, err
		}
		if err := c.Release(n); err != nil {
			return pos, err
		}
		pos += uint64(n)
		switch rng.IntN(256) {
		case 0:
			time.Sleep(time.Duration(rng.IntN(20)) * time.Microsecond)
		case 1, 2, 3:
			runtime.Gosched()
		}
	}
}

func childRingConsumer() error {
	arena, err := MapArena(os.NewFile(3, "arena"))
	if err != nil {
		return err
	}
	defer arena.Close()
	rd, err := DoorbellFromFile(os.NewFile(4, "readable"))
	if err != nil {
		return err
	}
	wr, err := DoorbellFromFile(os.NewFile(5, "writable"))
	if err != nil {
		return err
	}
	layout, err := decodeLayout(os.Getenv("RING_LAYOUT"))
	if err != nil {
		return err
	}
	total, err := envUint("RING_TOTAL")
	if err != nil {
		return err
	}
	seed, err := envUint("RING_SEED")
	if err != nil {
		return err
	}
	c, err := OpenConsumer(arena.Bytes(), layout, rd, wr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	got, err := consumeRandom(ctx, c, rand.New(rand.NewPCG(seed, 99)))
	if err != nil {
		return fmt.Errorf("after %d bytes: %w", got, err)
	}
	if got != total {
		return fmt.Errorf("consumed %d bytes, want %d", got, total)
	}
	return c.Close()
}

// runCrossProcess streams total bytes from this process to a child consumer.
func runCrossProcess(t *testing.T, capacity, total uint64) {
	t.Helper()
	f := newRingFixture(t, capacity)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	cmd := spawnChild(t, "ring-consumer", []string{
		"RING_LAYOUT=" + encodeLayout(f.layout),
		"RING_TOTAL=" + strconv.FormatUint(total, 10),
		"RING_SEED=" + strconv.FormatUint(seed, 10),
	}, f.childFiles(t)...)
	p, err := OpenProducer(f.arena.Bytes(), f.layout, f.readable, f.writable)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	wraps, err := produceRandom(ctx, p, total, capacity, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child consumer: %v", err)
	}
	el := time.Since(start)
	t.Logf("%d MiB through a %d-byte ring across processes in %v (%.2f GB/s)",
		total>>20, capacity, el, float64(total)/el.Seconds()/1e9)
	// Too few wraps (a huge ring) cannot be expected to hit every class.
	if total/capacity >= 1024 && wraps != ^uint64(0) {
		t.Errorf("wrap-around offset classes covered %064b, want all 64", wraps)
	}
}

func TestRingCrossProcess(t *testing.T) {
	tests := []struct {
		name     string
		capacity uint64
		total    uint64
	}{
		{"odd_capacity_4288", 64 * 67, 32 << 20},
		{"capacity_64KiB", 64 << 10, 64 << 20},
		{"capacity_1MiB_plus_64", 1<<20 + 64, 128 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runCrossProcess(t, tt.capacity, tt.total) })
	}
}

// TestRingCrossProcess1GiB is the full-size safety run (spec §41 layer 1).
func TestRingCrossProcess1GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB stream; runs without -short")
	}
	runCrossProcess(t, 64*1025, 1<<30)
}
