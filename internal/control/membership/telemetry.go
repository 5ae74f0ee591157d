package membership

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/memberlist"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Telemetry bounds: at most 256 keys are admitted per node. A reading
// must fit one gossip packet.
const (
	DefaultTelemetryKeys = 256
	MaxReadingKey        = 64
	MaxReadingValue      = 512
)

// Telemetry errors.
var (
	ErrTelemetryFull = errors.New("membership: telemetry admission map is full")
	ErrReading       = errors.New("membership: bad telemetry reading")
)

// Reading is one last-write-wins telemetry value: for each (Node, Key) the
// highest Version wins.
type Reading struct {
	Node    ids.NodeID
	Key     string
	Version uint64
	Value   []byte
}

type readingKey struct {
	node ids.NodeID
	key  string
}

// Gossip user message tags.
const (
	msgReading = 't' // a telemetry reading
	msgLeaving = 'l' // a node id that is about to leave gracefully
)

func (r Reading) check() error {
	if err := r.Node.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrReading, err)
	}
	if r.Key == "" || len(r.Key) > MaxReadingKey {
		return fmt.Errorf("%w: key of %d bytes (1..%d)", ErrReading, len(r.Key), MaxReadingKey)
	}
	if len(r.Value) > MaxReadingValue {
		return fmt.Errorf("%w: value of %d bytes (max %d)", ErrReading, len(r.Value), MaxReadingValue)
	}
	return nil
}

// appendReading encodes r: str node | str key | uvarint version | str value.
func appendReading(b []byte, r Reading) []byte {
	for _, s := range []string{string(r.Node), r.Key} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, r.Version)
	b = binary.AppendUvarint(b, uint64(len(r.Value)))
	return append(b, r.Value...)
}

func (d *decoder) reading() Reading {
	var r Reading
	r.Node = ids.NodeID(d.str())
	r.Key = d.str()
	r.Version = d.uvarint()
	n := d.uvarint()
	if n > MaxReadingValue {
		if d.err == nil {
			d.err = fmt.Errorf("value of %d bytes", n)
		}
		d.b = nil
		return r
	}
	r.Value = d.bytes(int(n))
	return r
}

// telemetry is the admission map. Its methods are called from memberlist's
// delegate callbacks and from Publish; they never block beyond mu.
type telemetry struct {
	limit   int
	changed chan struct{} // 1-buffered: a reading changed

	mu       sync.Mutex
	readings map[readingKey]Reading // guarded by mu
	members  map[ids.NodeID]bool    // guarded by mu: nodes whose readings are admitted
	refused  uint64                 // guarded by mu: readings refused because the map was full
}

func newTelemetry(limit int, self ids.NodeID) *telemetry {
	return &telemetry{
		limit:    limit,
		changed:  make(chan struct{}, 1),
		readings: map[readingKey]Reading{},
		members:  map[ids.NodeID]bool{self: true},
	}
}

// admit applies last-write-wins. It returns whether r was newer and stored,
// or ErrTelemetryFull when r is a new key and the map is full.
func (t *telemetry) admit(r Reading) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.members[r.Node] {
		return false, nil // a departed or unknown node: no zombies
	}
	k := readingKey{r.Node, r.Key}
	old, ok := t.readings[k]
	if ok && r.Version <= old.Version {
		return false, nil
	}
	if !ok && len(t.readings) >= t.limit {
		t.refused++
		return false, ErrTelemetryFull
	}
	t.readings[k] = r
	select {
	case t.changed <- struct{}{}:
	default:
	}
	return true, nil
}

func (t *telemetry) lastVersion(node ids.NodeID, key string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readings[readingKey{node, key}].Version
}

func (t *telemetry) setMember(node ids.NodeID, alive bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if alive {
		t.members[node] = true
		return
	}
	delete(t.members, node)
	removed := false
	for k := range t.readings {
		if k.node == node {
			delete(t.readings, k)
			removed = true
		}
	}
	if removed {
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
}

func (t *telemetry) snapshot() []Reading {
	t.mu.Lock()
	out := make([]Reading, 0, len(t.readings))
	for _, r := range t.readings {
		r.Value = slices.Clone(r.Value)
		out = append(out, r)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Reading) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Key, b.Key))
	})
	return out
}

// encodeState is the push/pull payload: uvarint count, then readings.
func (t *telemetry) encodeState() []byte {
	rs := t.snapshot()
	b := binary.AppendUvarint(nil, uint64(len(rs)))
	for _, r := range rs {
		b = appendReading(b, r)
	}
	return b
}

func decodeState(b []byte) ([]Reading, error) {
	d := decoder{b: b}
	n := d.uvarint()
	if n > 1<<16 {
		return nil, fmt.Errorf("%w: %d readings in remote state", ErrReading, n)
	}
	var out []Reading
	for range n {
		r := d.reading()
		if d.err != nil {
			return nil, fmt.Errorf("%w: %v", ErrReading, d.err)
		}
		out = append(out, r)
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: trailing bytes", ErrReading)
	}
	return out, nil
}

// readingBroadcast is one reading queued for gossip; a newer reading of the
// same (node, key) invalidates it.
type readingBroadcast struct {
	key readingKey
	msg []byte
}

func newReadingBroadcast(r Reading) *readingBroadcast {
	return &readingBroadcast{key: readingKey{r.Node, r.Key}, msg: appendReading([]byte{msgReading}, r)}
}

func (b *readingBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*readingBroadcast)
	return ok && o.key == b.key
}

func (b *readingBroadcast) Message() []byte { return b.msg }
func (b *readingBroadcast) Finished()       {}
