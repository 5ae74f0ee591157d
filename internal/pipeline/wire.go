package pipeline

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/skulk/skulk/internal/engine/sample"
)

// Kind is what an object asks of the next rank.
type Kind uint8

const (
	// KindOpen starts a sequence: every rank makes its cache, the last one
	// its sampler. One entry; the payload is the sequence's Spec.
	KindOpen Kind = iota + 1
	// KindPrefill is a chunk of a prompt: one entry of Rows positions.
	KindPrefill
	// KindDecode is one position of each of several sequences.
	KindDecode
	// KindToken carries sampled tokens from the last rank back to rank 0,
	// one per entry; Pos is the position the token will take.
	KindToken
	// KindRelease ends sequences: every rank frees their caches.
	KindRelease
)

var kindNames = [...]string{KindOpen: "open", KindPrefill: "prefill", KindDecode: "decode", KindToken: "token", KindRelease: "release"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Object wire constants.
const (
	objectMagic   uint32 = 0x4c504b53 // "SKPL" little-endian
	objectVersion uint8  = 1
	headerLen            = 16
	entryLen             = 16
	specLen              = 48
	// maxEntries bounds an object's entries: no batch is larger than a
	// model step (512 sequences), so more is a corrupt object.
	maxEntries = 4096
)

// entry is one sequence's part of an object.
type entry struct {
	seq  uint64
	pos  int // the cache position of the entry's first row (token: the position the token takes)
	rows int // positions carried: prefill n, decode 1, token 1, open and release 0
}

// object is a decoded pipeline object.
type object struct {
	kind    Kind
	entries []entry
	width   int       // floats per row of hidden (prefill, decode)
	hidden  []float32 // the rows of every entry in order (prefill, decode)
	tokens  []int32   // one per entry (token)
	spec    Spec      // open
}

// Spec is what every rank must know of a sequence, carried by its open
// object: the cache size, where the prompt ends (the last rank samples the
// first token there) and how the last rank samples.
type Spec struct {
	PromptLen int
	Capacity  int // positions the caches hold: the prompt plus the generation budget
	Sample    sample.Params
}

// ProtocolError rejects an object that breaks the wire format or the
// protocol's ordering; it is a fault of the edge it arrived on.
type ProtocolError struct{ Detail string }

func (e *ProtocolError) Error() string { return "pipeline: protocol violation: " + e.Detail }

func protoErr(format string, a ...any) error {
	return &ProtocolError{Detail: fmt.Sprintf(format, a...)}
}

// encodeObject frames an object. hidden must hold width floats per row of
// every entry (prefill, decode), tokens one id per entry (token).
func encodeObject(kind Kind, entries []entry, width int, hidden []float32, tokens []int32, spec *Spec) []byte {
	n := headerLen + entryLen*len(entries)
	switch kind {
	case KindOpen:
		n += specLen
	case KindPrefill, KindDecode:
		n += 4 * len(hidden)
	case KindToken:
		n += 4 * len(tokens)
	}
	b := make([]byte, n)
	binary.LittleEndian.PutUint32(b[0:], objectMagic)
	b[4] = objectVersion
	b[5] = byte(kind)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(entries)))
	if kind == KindPrefill || kind == KindDecode {
		binary.LittleEndian.PutUint32(b[12:], uint32(width))
	}
	off := headerLen
	for _, e := range entries {
		binary.LittleEndian.PutUint64(b[off:], e.seq)
		binary.LittleEndian.PutUint32(b[off+8:], uint32(e.pos))
		binary.LittleEndian.PutUint32(b[off+12:], uint32(e.rows))
		off += entryLen
	}
	switch kind {
	case KindOpen:
		putSpec(b[off:], *spec)
	case KindPrefill, KindDecode:
		for _, v := range hidden {
			binary.LittleEndian.PutUint32(b[off:], math.Float32bits(v))
			off += 4
		}
	case KindToken:
		for _, t := range tokens {
			binary.LittleEndian.PutUint32(b[off:], uint32(t))
			off += 4
		}
	}
	return b
}

// decodeObject parses an object strictly: unknown magic, version or kind,
// nonzero reserved bytes, entries the kind does not allow and a payload of
// any other length than the entries imply are *ProtocolError. It allocates
// no more than a small multiple of len(b).
func decodeObject(b []byte) (object, error) {
	if len(b) < headerLen {
		return object{}, protoErr("object of %d bytes, shorter than its %d-byte header", len(b), headerLen)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != objectMagic {
		return object{}, protoErr("bad object magic %#x", m)
	}
	if v := b[4]; v != objectVersion {
		return object{}, protoErr("object version %d, want %d", v, objectVersion)
	}
	o := object{kind: Kind(b[5])}
	if o.kind < KindOpen || o.kind > KindRelease {
		return object{}, protoErr("unknown object kind %d", b[5])
	}
	if r := binary.LittleEndian.Uint16(b[6:]); r != 0 {
		return object{}, protoErr("reserved header bytes %#x are not zero", r)
	}
	count := uint64(binary.LittleEndian.Uint32(b[8:]))
	width := uint64(binary.LittleEndian.Uint32(b[12:]))
	switch {
	case count == 0 || count > maxEntries:
		return object{}, protoErr("%s object of %d entries (1 to %d)", o.kind, count, maxEntries)
	case (o.kind == KindOpen || o.kind == KindPrefill) && count != 1:
		return object{}, protoErr("%s object of %d entries, want 1", o.kind, count)
	case (o.kind == KindPrefill || o.kind == KindDecode) != (width != 0):
		return object{}, protoErr("%s object with row width %d", o.kind, width)
	}
	if uint64(len(b)) < headerLen+entryLen*count {
		return object{}, protoErr("%d entries do not fit in %d bytes", count, len(b))
	}
	o.width = int(width)
	o.entries = make([]entry, count)
	var rows uint64
	off := headerLen
	for i := range o.entries {
		e := entry{seq: binary.LittleEndian.Uint64(b[off:])}
		pos, n := binary.LittleEndian.Uint32(b[off+8:]), binary.LittleEndian.Uint32(b[off+12:])
		if pos > math.MaxInt32 {
			return object{}, protoErr("entry %d position %d is out of range", i, pos)
		}
		switch want := uint32(1); o.kind {
		case KindOpen, KindRelease:
			want = 0
			fallthrough
		case KindDecode, KindToken:
			if n != want {
				return object{}, protoErr("%s entry %d of %d rows, want %d", o.kind, i, n, want)
			}
		case KindPrefill:
			if n == 0 {
				return object{}, protoErr("prefill entry of no rows")
			}
		}
		e.pos, e.rows = int(pos), int(n)
		rows += uint64(n)
		o.entries[i] = e
		off += entryLen
	}
	payload := b[off:]
	var want uint64
	switch o.kind {
	case KindOpen:
		want = specLen
	case KindPrefill, KindDecode:
		// rows*width*4 only when it cannot exceed the payload (nor overflow).
		want = math.MaxUint64
		if width <= uint64(len(payload))/4/rows {
			want = rows * width * 4
		}
	case KindToken:
		want = 4 * count
	}
	if uint64(len(payload)) != want {
		return object{}, protoErr("%s object payload of %d bytes, its entries imply %d", o.kind, len(payload), want)
	}
	switch o.kind {
	case KindOpen:
		s, err := getSpec(payload)
		if err != nil {
			return object{}, err
		}
		o.spec = s
	case KindPrefill, KindDecode:
		o.hidden = make([]float32, len(payload)/4)
		for i := range o.hidden {
			o.hidden[i] = math.Float32frombits(binary.LittleEndian.Uint32(payload[4*i:]))
		}
	case KindToken:
		o.tokens = make([]int32, count)
		for i := range o.tokens {
			o.tokens[i] = int32(binary.LittleEndian.Uint32(payload[4*i:]))
		}
	}
	return o, nil
}

// putSpec writes s in its 48-byte layout; the caller has validated it.
func putSpec(b []byte, s Spec) {
	p := s.Sample
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(s.PromptLen))
	le.PutUint32(b[4:], uint32(s.Capacity))
	le.PutUint32(b[8:], math.Float32bits(p.Temperature))
	le.PutUint32(b[12:], math.Float32bits(p.TopP))
	le.PutUint32(b[16:], math.Float32bits(p.MinP))
	le.PutUint32(b[20:], uint32(int32(min(p.TopK, math.MaxInt32))))
	le.PutUint32(b[24:], math.Float32bits(p.RepeatPenalty))
	le.PutUint32(b[28:], math.Float32bits(p.PresencePenalty))
	le.PutUint32(b[32:], math.Float32bits(p.FrequencyPenalty))
	le.PutUint32(b[36:], uint32(int32(min(p.RepeatLastN, math.MaxInt32))))
	le.PutUint64(b[40:], p.Seed)
}

func getSpec(b []byte) (Spec, error) {
	le := binary.LittleEndian
	f := func(off int) float32 { return math.Float32frombits(le.Uint32(b[off:])) }
	s := Spec{
		PromptLen: int(le.Uint32(b[0:])),
		Capacity:  int(le.Uint32(b[4:])),
		Sample: sample.Params{
			Temperature:      f(8),
			TopP:             f(12),
			MinP:             f(16),
			TopK:             int(int32(le.Uint32(b[20:]))),
			RepeatPenalty:    f(24),
			PresencePenalty:  f(28),
			FrequencyPenalty: f(32),
			RepeatLastN:      int(int32(le.Uint32(b[36:]))),
			Seed:             le.Uint64(b[40:]),
		},
	}
	if err := s.validate(); err != nil {
		return Spec{}, protoErr("open: %v", err)
	}
	return s, nil
}

// validate checks a spec's ranges (as the head makes them and as a rank
// accepts them).
func (s Spec) validate() error {
	switch {
	case s.PromptLen < 1 || s.PromptLen > math.MaxInt32:
		return fmt.Errorf("prompt of %d tokens", s.PromptLen)
	case s.Capacity <= s.PromptLen || s.Capacity > math.MaxInt32:
		return fmt.Errorf("cache of %d positions for a %d-token prompt", s.Capacity, s.PromptLen)
	}
	return s.Sample.Validate()
}
