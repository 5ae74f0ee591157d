//go:build linux

package dataplane

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchResult is what one timed transfer measured.
type benchResult struct {
	bytes    uint64
	elapsed  time.Duration
	p50, p99 time.Duration
}

func (r benchResult) report(b *testing.B) {
	b.ReportMetric(float64(r.bytes)/r.elapsed.Seconds()/1e9, "GB/s")
	b.ReportMetric(float64(r.p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(r.p99.Microseconds()), "p99-µs")
}

func percentiles(lat []time.Duration) (time.Duration, time.Duration) {
	slices.Sort(lat)
	return lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
}

// stampedObjects writes count objects, each carrying its send time, and
// reads them back on the other end, measuring per-object latency. In
// lockstep the writer waits for each object to arrive before sending the
// next, so the latency is that of an idle path (a pipeline stage handing
// one activation row on), not of a queue.
func stampedObjects(ctx context.Context, w func(i int, buf []byte) error, r func(buf []byte) error, count, size int, lockstep bool) (benchResult, error) {
	base := time.Now()
	errc := make(chan error, 1)
	arrived := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, size)
		for i := range count {
			binary.LittleEndian.PutUint64(buf, uint64(time.Since(base)))
			if err := w(i, buf); err != nil {
				errc <- err
				return
			}
			if lockstep {
				select {
				case <-arrived:
				case <-ctx.Done():
					errc <- ctx.Err()
					return
				}
			}
		}
		errc <- nil
	}()
	lat := make([]time.Duration, 0, count)
	buf := make([]byte, size)
	for range count {
		if err := r(buf); err != nil {
			return benchResult{}, err
		}
		lat = append(lat, time.Since(base)-time.Duration(binary.LittleEndian.Uint64(buf)))
		if lockstep {
			arrived <- struct{}{}
		}
	}
	el := time.Since(base)
	if err := <-errc; err != nil {
		return benchResult{}, err
	}
	p50, p99 := percentiles(lat)
	return benchResult{bytes: uint64(count) * uint64(size+ObjectHeaderLen), elapsed: el, p50: p50, p99: p99}, nil
}

// childObjectWorker is the runner of the benchmark: it writes objects into
// the egress ring and reads them back from the ingress ring after they went
// through both nodes' pumps and QUIC.
func childObjectWorker() error {
	arena, err := MapArena(os.NewFile(3, "arena"))
	if err != nil {
		return err
	}
	defer arena.Close()
	var bells [4]*Doorbell
	for i := range bells {
		if bells[i], err = DoorbellFromFile(os.NewFile(uintptr(4+i), "bell")); err != nil {
			return err
		}
	}
	out, err := decodeLayout(os.Getenv("EGRESS"))
	if err != nil {
		return err
	}
	in, err := decodeLayout(os.Getenv("INGRESS"))
	if err != nil {
		return err
	}
	count, _ := envUint("COUNT")
	size, _ := envUint("SIZE")
	lockstep := os.Getenv("LOCKSTEP") == "1"
	p, err := OpenProducer(arena.Bytes(), out, bells[0], bells[1])
	if err != nil {
		return err
	}
	c, err := OpenConsumer(arena.Bytes(), in, bells[2], bells[3])
	if err != nil {
		return err
	}
	spec := ObjectSpec{MaxExtent: size, Sequence: SequenceContiguous}
	w := NewObjectWriter(p, 1, spec, Identity{}, nil)
	r := NewObjectReader(c, 1, spec, Identity{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := stampedObjects(ctx,
		func(i int, buf []byte) error { return w.Write(ctx, ObjectID(i+1), uint64(i), 0, buf) },
		func(buf []byte) error {
			o, err := r.Next(ctx, buf)
			if err == nil && len(o.Payload) != len(buf) {
				err = fmt.Errorf("object of %d bytes, want %d", len(o.Payload), len(buf))
			}
			return err
		}, int(count), int(size), lockstep)
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	if _, err := r.Next(ctx, nil); err != io.EOF {
		return fmt.Errorf("after last object: %v", err)
	}
	fmt.Printf("%d %d %d %d\n", res.bytes, res.elapsed, res.p50, res.p99)
	return nil
}

// runQUICPath moves count objects runner process -> egress ring -> QUIC
// (loopback) -> ingress ring -> runner process.
func runQUICPath(b *testing.B, count, size int, lockstep bool) benchResult {
	b.Helper()
	const ringCap = 4 << 20
	nodes := newTestNodes(b, 2, 16<<20)
	a, bn := nodes[0], nodes[1]
	arena, err := NewArena("bench", 16<<20)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { arena.Close() })
	m := NewArenaManager(ManagerConfig{Memory: arena.Bytes()})
	b.Cleanup(m.Close)
	ctx := b.Context()
	out, err := m.Lease(ctx, LeaseRequest{Edge: 1, Spec: RingSpec{DataCapacity: ringCap, Direction: Egress}})
	if err != nil {
		b.Fatal(err)
	}
	in, err := m.Lease(ctx, LeaseRequest{Edge: 1, Spec: RingSpec{DataCapacity: ringCap, Direction: Ingress}})
	if err != nil {
		b.Fatal(err)
	}
	var bells [4]*Doorbell
	files := []*os.File{arena.File()}
	for i := range bells {
		bells[i], _ = NewDoorbell()
		f, err := bells[i].File()
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
		b.Cleanup(func() { f.Close(); bells[i].Close() })
	}
	pumpOut, err := OpenConsumer(arena.Bytes(), out.Layout, bells[0], bells[1])
	if err != nil {
		b.Fatal(err)
	}
	pumpIn, err := OpenProducer(arena.Bytes(), in.Layout, bells[2], bells[3])
	if err != nil {
		b.Fatal(err)
	}
	if err := bn.driver.EstablishRecv(ctx, RecvSpec{Edge: 1, Ring: pumpIn}); err != nil {
		b.Fatal(err)
	}
	if err := a.driver.EstablishSend(ctx, SendSpec{Edge: 1, Peer: bn.id, Ring: pumpOut}); err != nil {
		b.Fatal(err)
	}
	var stdout strings.Builder
	cmd := spawnChildOut(b, "object-worker", &stdout, []string{
		"EGRESS=" + encodeLayout(out.Layout), "INGRESS=" + encodeLayout(in.Layout),
		"COUNT=" + strconv.Itoa(count), "SIZE=" + strconv.Itoa(size), "LOCKSTEP=" + lockstepEnv(lockstep),
	}, files...)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("worker: %v", err)
	}
	var bytes, el, p50, p99 int64
	if _, err := fmt.Sscan(stdout.String(), &bytes, &el, &p50, &p99); err != nil {
		b.Fatalf("worker output %q: %v", stdout.String(), err)
	}
	return benchResult{uint64(bytes), time.Duration(el), time.Duration(p50), time.Duration(p99)}
}

func lockstepEnv(on bool) string {
	if on {
		return "1"
	}
	return "0"
}

// runTCPPath moves the same records over a plain loopback TCP socket.
func runTCPPath(b *testing.B, count, size int, lockstep bool) benchResult {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	wc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer wc.Close()
	rc, ok := <-acc
	if !ok {
		b.Fatal("accept failed")
	}
	defer rc.Close()
	hdr := make([]byte, ObjectHeaderLen)
	rhdr := make([]byte, ObjectHeaderLen)
	res, err := stampedObjects(b.Context(),
		func(i int, buf []byte) error {
			ObjectHeader{ObjectID: ObjectID(i + 1), Sequence: uint64(i), Extent: uint64(len(buf))}.Put(hdr)
			if _, err := wc.Write(hdr); err != nil {
				return err
			}
			_, err := wc.Write(buf)
			return err
		},
		func(buf []byte) error {
			if _, err := io.ReadFull(rc, rhdr); err != nil {
				return err
			}
			_, err := io.ReadFull(rc, buf)
			return err
		}, count, size, lockstep)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// BenchmarkEdgePath reports GB/s and per-object latency for the full edge
// path and, in the same run, a plain TCP loopback copy of the same records.
func BenchmarkEdgePath(b *testing.B) {
	for _, size := range []int{8 << 10, 1 << 20} {
		for _, path := range edgePaths {
			b.Run(fmt.Sprintf("%s/%dKiB", path.name, size>>10), func(b *testing.B) {
				count := max(b.N, 64)
				b.SetBytes(int64(size))
				b.ResetTimer()
				res := path.run(b, count, size, false)
				b.StopTimer()
				res.report(b)
			})
		}
	}
}

var edgePaths = []struct {
	name string
	run  func(b *testing.B, count, size int, lockstep bool) benchResult
}{{"ring_quic_ring", runQUICPath}, {"tcp_loopback", runTCPPath}}

// BenchmarkEdgeLatency reports the one-way latency of an idle path: one
// object in flight at a time, the size of an activation row handed between
// pipeline stages (hidden 2048 and 4096 as F32), with plain TCP loopback in
// the same run for the ratio.
func BenchmarkEdgeLatency(b *testing.B) {
	for _, size := range []int{8 << 10, 16 << 10} {
		for _, path := range edgePaths {
			b.Run(fmt.Sprintf("%s/%dKiB", path.name, size>>10), func(b *testing.B) {
				count := max(b.N, 64)
				b.ResetTimer()
				res := path.run(b, count, size, true)
				b.StopTimer()
				b.ReportMetric(float64(res.p50.Nanoseconds())/1e3, "p50-µs")
				b.ReportMetric(float64(res.p99.Nanoseconds())/1e3, "p99-µs")
			})
		}
	}
}
