package link

import (
	"encoding/binary"
	"io"
	"slices"
	"sync"
	"time"
)

// How a relay measures a link (the node's view of its pipeline edges, for
// the cluster diagnostics): the relay of the sending rank's node counts
// every object (a ConnLink frame) and its bytes, and times its hop.
//
// Hop latency is measured per object, send → ack, on one clock: the
// sending relay notes the time when an object's frame header arrives from
// the sending runner and forwards the object on the QUIC stream; the
// receiving relay, once it has written the whole object into the receiving
// runner's socket, writes one ackByte back on the same stream; the sending
// relay takes the oldest pending time for each ack. A sample is therefore
// the object's transfer to the far node plus the ack's way back: an upper
// bound of the one-way hop that needs no clock agreement between nodes.
// Streams are ordered, so the n-th ack answers the n-th object. A relay
// that sends no acks (an older one) leaves the latency unmeasured; the
// dialing relay ignores bytes it does not expect. On a link whose two
// ranks share a node the sample is the relay's own copy: header in to
// object written.
const ackByte byte = 'a'

// Link states in a LinkReport.
const (
	LinkWaiting   = "waiting"   // the sending runner is linked; the receiving end is not yet
	LinkConnected = "connected" // objects flow
	LinkClosed    = "closed"    // the link ended (a fault, or the instance stopped)
)

// latencySamples bounds the hop times a meter keeps: the percentiles are
// over the latest ones.
const latencySamples = 1024

// maxPending bounds the objects awaiting an ack; past it the link stops
// timing (its acks could no longer be matched) but still counts.
const maxPending = 1 << 14

// LinkReport is one link as the relay of its sending rank's node sees it.
type LinkReport struct {
	Instance string
	Link     int
	Remote   bool   // the receiving rank is on another node
	State    string // LinkWaiting, LinkConnected or LinkClosed
	// Err is the latest failure while connecting (dialing the receiving
	// rank's node, or waiting for its runner); empty once connected.
	Err      string
	Objects  uint64
	Bytes    uint64
	P50, P99 time.Duration // hop latency over the latest samples; 0 without any
	Samples  uint64        // hop times measured in all
}

// linkMeter is one link's counters. The relay's goroutines for the link
// update it; Links reads it.
type linkMeter struct {
	mu      sync.Mutex
	rep     LinkReport
	lat     []time.Duration // ring of the latest latencySamples
	next    int
	pending []time.Time // objects sent, awaiting their acks, oldest first
	untimed bool        // the pending queue overflowed: no more samples
}

// set records the link's state; err, when set (or on connecting), replaces
// the last error.
func (m *linkMeter) set(state, err string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rep.State = state
	if err != "" || state == LinkConnected {
		m.rep.Err = err
	}
}

// begin notes that an object's hop starts now; timed says an ack will
// follow it. It comes before the object is forwarded, so that its ack can
// never arrive first.
func (m *linkMeter) begin(timed bool) time.Time {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !timed || m.untimed {
		return now
	}
	if len(m.pending) >= maxPending {
		m.untimed, m.pending = true, nil
		return now
	}
	m.pending = append(m.pending, now)
	return now
}

// sent counts an object of size bytes (frame header included).
func (m *linkMeter) sent(size int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rep.Objects++
	m.rep.Bytes += uint64(size)
}

// acked matches an ack to the oldest object awaiting one.
func (m *linkMeter) acked(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return
	}
	t := m.pending[0]
	m.pending = m.pending[1:]
	m.sample(now.Sub(t))
}

func (m *linkMeter) sample(d time.Duration) {
	if len(m.lat) < latencySamples {
		m.lat = append(m.lat, d)
	} else {
		m.lat[m.next] = d
		m.next = (m.next + 1) % latencySamples
	}
	m.rep.Samples++
}

func (m *linkMeter) report() LinkReport {
	m.mu.Lock()
	r := m.rep
	lat := slices.Clone(m.lat)
	m.mu.Unlock()
	r.P50, r.P99 = Percentile(lat, 50), Percentile(lat, 99)
	return r
}

// Percentile is the nearest-rank p-th percentile of ds (0 when empty). It
// sorts ds.
func Percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := (len(ds)*p + 99) / 100 // ceil(n·p/100), the nearest rank
	return ds[min(max(i, 1), len(ds))-1]
}

// copyFrames copies ConnLink frames from src to dst until either fails.
// begun is called when a frame's header has arrived, done once the whole
// frame is written to dst.
func copyFrames(dst io.Writer, src io.Reader, begun func() time.Time, done func(start time.Time, size int) error) error {
	var hdr [4]byte
	buf := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return err
		}
		start := begun()
		n := binary.LittleEndian.Uint32(hdr[:])
		if _, err := dst.Write(hdr[:]); err != nil {
			return err
		}
		if _, err := io.CopyBuffer(dst, io.LimitReader(src, int64(n)), buf); err != nil {
			return err
		}
		if err := done(start, len(hdr)+int(n)); err != nil {
			return err
		}
	}
}

// spliceMetered is splice for a link the relay meters: src's frames go to
// dst, each counted in m; quiet is read until it ends (onQuiet sees each
// byte it carries); then both ends close.
func spliceMetered(src io.ReadCloser, dst io.WriteCloser, quiet io.Reader, onQuiet func(byte), begun func() time.Time, done func(time.Time, int) error) {
	var once sync.Once
	end := func() {
		once.Do(func() {
			src.Close()
			dst.Close()
		})
	}
	go func() {
		defer end()
		var b [64]byte
		for {
			n, err := quiet.Read(b[:])
			for _, c := range b[:n] {
				if onQuiet != nil {
					onQuiet(c)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	copyFrames(dst, src, begun, done)
	end()
}
