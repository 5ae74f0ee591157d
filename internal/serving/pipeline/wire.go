package pipeline

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
)

// Kind is what an object asks of the next rank.
type Kind uint8

const (
	// KindOpen starts a sequence: every rank makes its cache, the last one
	// its sampler (and constraint). One entry; the payload is the
	// sequence's Spec.
	KindOpen Kind = iota + 1
	// KindPrefill is a chunk of a prompt: one entry of Rows positions.
	KindPrefill
	// KindDecode is one position of each of several sequences.
	KindDecode
	// KindToken carries sampled tokens from the last rank back to rank 0,
	// one per entry (with their logprob records when the sequence asked for
	// them); Pos is the position the token will take.
	KindToken
	// KindRelease ends sequences: every rank frees their caches. A traced
	// sequence's release carries the timings of the ranks it passed.
	KindRelease
	// KindReport carries a traced sequence's timings on every rank from
	// the last rank back to rank 0, after its release.
	KindReport
)

var kindNames = [...]string{KindOpen: "open", KindPrefill: "prefill", KindDecode: "decode", KindToken: "token", KindRelease: "release", KindReport: "report"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Object wire constants.
const (
	objectMagic   uint32 = 0x4c504b53 // "SKPL" little-endian
	objectVersion uint8  = 3
	headerLen            = 16
	entryLen             = 16
	specLen              = 56  // the open payload before its constraint
	recordLen            = 8   // a logprob record: id i32, logprob f32
	maxRanks             = 256 // no pipeline has more ranks
	timingLen            = 48  // a rank's timing record (sequence.RankTiming)
	// maxEntries bounds an object's entries: no batch is larger than a
	// model step (512 sequences), so more is a corrupt object.
	maxEntries = 4096
)

// Bounds of what a sequence may ask of the last rank.
const (
	// MaxConstraintBytes bounds a sequence's constraint source (a JSON
	// schema): it travels in the open object.
	MaxConstraintBytes = 4 << 20
	// MaxTopLogprobs bounds the alternatives reported per token (OpenAI's
	// top_logprobs limit).
	MaxTopLogprobs = 20
)

// Token values other than vocabulary ids that the last rank returns.
const (
	// tokenNone: the sampler found no token (every logit masked or not
	// finite), as sample.NoToken.
	tokenNone int32 = -1
	// tokenConstraintFailed: the sequence's constraint could not be made
	// (the stage has none, or its source was refused) or refused the token
	// drawn; the last rank logs why.
	tokenConstraintFailed int32 = -2
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
	// width is the floats per row of hidden (prefill, decode), or the
	// logprob records per entry (token: 0, or 1 + the top alternatives).
	width   int
	hidden  []float32             // the rows of every entry in order (prefill, decode)
	tokens  []int32               // one per entry (token)
	records []sample.Logprob      // width per entry, in entry order (token)
	spec    Spec                  // open
	timings []sequence.RankTiming // width of them (release, report)
}

// Spec is what every rank must know of a sequence, carried by its open
// object: the cache size, where the prompt ends (the last rank samples the
// first token there) and how the last rank samples and reports.
type Spec struct {
	PromptLen int
	Capacity  int // positions the caches hold: the prompt plus the generation budget
	Sample    sample.Params
	// Logprobs asks the last rank for each sampled token's log-probability
	// and its TopLogprobs most likely alternatives (over the raw logits,
	// before the constraint and penalties, as engine.Token.Logits).
	Logprobs    bool
	TopLogprobs int
	// Trace asks every rank for its timings of the sequence (sequence.RankTiming),
	// reported back to rank 0 after its release.
	Trace bool
	// Constraint is the source the last rank's StageConfig.Constrain
	// builds the sequence's constraint from (the runner: a JSON schema);
	// empty means none. At most MaxConstraintBytes.
	Constraint []byte
}

// records is how many logprob records each of the sequence's tokens
// carries back to rank 0.
func (s Spec) records() int {
	if !s.Logprobs {
		return 0
	}
	return 1 + s.TopLogprobs
}

// ProtocolError rejects an object that breaks the wire format or the
// protocol's ordering; it is a fault of the edge it arrived on.
type ProtocolError struct{ Detail string }

func (e *ProtocolError) Error() string { return "pipeline: protocol violation: " + e.Detail }

func protoErr(format string, a ...any) error {
	return &ProtocolError{Detail: fmt.Sprintf(format, a...)}
}

// encodeObject frames an object. hidden must hold width floats per row of
// every entry (prefill, decode); tokens one id per entry and records width
// per entry (token).
func encodeObject(o *object) []byte {
	n := headerLen + entryLen*len(o.entries)
	switch o.kind {
	case KindOpen:
		n += specLen + len(o.spec.Constraint)
	case KindPrefill, KindDecode:
		n += 4 * len(o.hidden)
	case KindToken:
		n += 4*len(o.tokens) + recordLen*len(o.records)
	case KindRelease, KindReport:
		n += timingLen * len(o.timings)
	}
	b := make([]byte, n)
	le := binary.LittleEndian
	le.PutUint32(b[0:], objectMagic)
	b[4] = objectVersion
	b[5] = byte(o.kind)
	le.PutUint32(b[8:], uint32(len(o.entries)))
	switch o.kind {
	case KindPrefill, KindDecode, KindToken:
		le.PutUint32(b[12:], uint32(o.width))
	case KindRelease, KindReport:
		le.PutUint32(b[12:], uint32(len(o.timings)))
	}
	off := headerLen
	for _, e := range o.entries {
		le.PutUint64(b[off:], e.seq)
		le.PutUint32(b[off+8:], uint32(e.pos))
		le.PutUint32(b[off+12:], uint32(e.rows))
		off += entryLen
	}
	switch o.kind {
	case KindOpen:
		putSpec(b[off:], o.spec)
	case KindPrefill, KindDecode:
		for _, v := range o.hidden {
			le.PutUint32(b[off:], math.Float32bits(v))
			off += 4
		}
	case KindToken:
		for _, t := range o.tokens {
			le.PutUint32(b[off:], uint32(t))
			off += 4
		}
		for _, r := range o.records {
			le.PutUint32(b[off:], uint32(r.ID))
			le.PutUint32(b[off+4:], math.Float32bits(r.Logprob))
			off += recordLen
		}
	case KindRelease, KindReport:
		for _, t := range o.timings {
			putTiming(b[off:], t)
			off += timingLen
		}
	}
	return b
}

// putTiming writes a rank's timing record: rank u32, prefill rows u32,
// decode steps u32, reserved u32 0, opened and released (Unix ns) i64,
// prefill and decode busy (ns) i64.
func putTiming(b []byte, t sequence.RankTiming) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(t.Rank))
	le.PutUint32(b[4:], uint32(t.PrefillRows))
	le.PutUint32(b[8:], uint32(t.DecodeSteps))
	le.PutUint64(b[16:], uint64(t.Opened.UnixNano()))
	le.PutUint64(b[24:], uint64(t.Released.UnixNano()))
	le.PutUint64(b[32:], uint64(t.PrefillBusy))
	le.PutUint64(b[40:], uint64(t.DecodeBusy))
}

// getTiming parses a timing record strictly.
func getTiming(b []byte) (sequence.RankTiming, error) {
	le := binary.LittleEndian
	t := sequence.RankTiming{Rank: int(le.Uint32(b[0:])), PrefillRows: int(le.Uint32(b[4:])), DecodeSteps: int(le.Uint32(b[8:])),
		Opened: time.Unix(0, int64(le.Uint64(b[16:]))), Released: time.Unix(0, int64(le.Uint64(b[24:]))),
		PrefillBusy: time.Duration(le.Uint64(b[32:])), DecodeBusy: time.Duration(le.Uint64(b[40:]))}
	switch {
	case le.Uint32(b[12:]) != 0:
		return sequence.RankTiming{}, protoErr("timing record's reserved bytes are not zero")
	case t.Rank < 0 || t.Rank >= maxRanks || t.PrefillRows < 0 || t.DecodeSteps < 0:
		return sequence.RankTiming{}, protoErr("timing record of rank %d, %d prefill rows, %d decode steps", t.Rank, t.PrefillRows, t.DecodeSteps)
	case t.PrefillBusy < 0 || t.DecodeBusy < 0 || t.Released.Before(t.Opened):
		return sequence.RankTiming{}, protoErr("timing record of rank %d with negative durations", t.Rank)
	}
	return t, nil
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
	if o.kind < KindOpen || o.kind > KindReport {
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
	case (o.kind == KindOpen || o.kind == KindPrefill || o.kind == KindRelease || o.kind == KindReport) && count != 1:
		return object{}, protoErr("%s object of %d entries, want 1", o.kind, count)
	case (o.kind == KindRelease || o.kind == KindReport) && width > maxRanks:
		return object{}, protoErr("%s object of %d timing records (at most %d)", o.kind, width, maxRanks)
	case o.kind == KindReport && width == 0:
		return object{}, protoErr("report object of no timing records")
	case o.kind == KindToken && width > 1+MaxTopLogprobs:
		return object{}, protoErr("token object of %d logprob records per entry (0 to %d)", width, 1+MaxTopLogprobs)
	case (o.kind == KindOpen || o.kind == KindPrefill || o.kind == KindDecode) && (o.kind != KindOpen) != (width != 0):
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
		case KindOpen, KindRelease, KindReport:
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
		if len(payload) >= specLen {
			want += uint64(binary.LittleEndian.Uint32(payload[specLen-4:]))
		}
	case KindPrefill, KindDecode:
		// rows*width*4 only when it cannot exceed the payload (nor overflow).
		want = math.MaxUint64
		if width <= uint64(len(payload))/4/rows {
			want = rows * width * 4
		}
	case KindToken:
		want = count * (4 + recordLen*width)
	case KindRelease, KindReport:
		want = timingLen * width
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
		recs, err := getRecords(payload[4*count:], o.tokens, int(width))
		if err != nil {
			return object{}, err
		}
		o.records = recs
	case KindRelease, KindReport:
		for i := range int(width) {
			t, err := getTiming(payload[timingLen*i:])
			if err != nil {
				return object{}, err
			}
			o.timings = append(o.timings, t)
		}
		o.width = 0
	}
	return o, nil
}

// getRecords parses the logprob records of a token object, width per
// token: the first is the token's own, the rest its alternatives, ids
// -1 with logprob 0 only as trailing padding (where fewer logits were
// finite than asked for).
func getRecords(b []byte, tokens []int32, width int) ([]sample.Logprob, error) {
	if width == 0 {
		return nil, nil
	}
	le := binary.LittleEndian
	recs := make([]sample.Logprob, len(tokens)*width)
	for i := range recs {
		r := sample.Logprob{ID: int32(le.Uint32(b[recordLen*i:])), Logprob: math.Float32frombits(le.Uint32(b[recordLen*i+4:]))}
		e, k := i/width, i%width
		switch {
		case k == 0 && r.ID != tokens[e]:
			return nil, protoErr("token entry %d's first logprob record is of id %d, not its token %d", e, r.ID, tokens[e])
		case k > 0 && r.ID < -1:
			return nil, protoErr("token entry %d's logprob record %d is of id %d", e, k, r.ID)
		case k > 1 && r.ID >= 0 && recs[i-1].ID == -1:
			return nil, protoErr("token entry %d's logprob record %d follows padding", e, k)
		case k > 0 && r.ID == -1 && r.Logprob != 0:
			return nil, protoErr("token entry %d's padding record %d has logprob %v", e, k, r.Logprob)
		}
		recs[i] = r
	}
	return recs, nil
}

// specTrace is the spec's flag bit of Spec.Trace.
const specTrace uint16 = 1

// putSpec writes s in its layout (specLen bytes and the constraint); the
// caller has validated it.
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
	if s.Logprobs {
		b[48] = 1
	}
	b[49] = byte(s.TopLogprobs)
	if s.Trace {
		le.PutUint16(b[50:], specTrace)
	}
	le.PutUint32(b[52:], uint32(len(s.Constraint)))
	copy(b[specLen:], s.Constraint)
}

// getSpec parses an open object's payload, whose length decodeObject has
// checked against its constraint length.
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
		Logprobs:    b[48] == 1,
		TopLogprobs: int(b[49]),
		Trace:       le.Uint16(b[50:]) == specTrace,
	}
	switch {
	case b[48] > 1:
		return Spec{}, protoErr("open: logprobs flag %d", b[48])
	case le.Uint16(b[50:])&^specTrace != 0:
		return Spec{}, protoErr("open: unknown spec flags %#x", le.Uint16(b[50:]))
	}
	if len(b) > specLen {
		s.Constraint = slices.Clone(b[specLen:])
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
	case s.TopLogprobs < 0 || s.TopLogprobs > MaxTopLogprobs:
		return fmt.Errorf("%d top logprobs (0 to %d)", s.TopLogprobs, MaxTopLogprobs)
	case s.TopLogprobs > 0 && !s.Logprobs:
		return fmt.Errorf("%d top logprobs without logprobs", s.TopLogprobs)
	case len(s.Constraint) > MaxConstraintBytes:
		return fmt.Errorf("a constraint of %d bytes (at most %d)", len(s.Constraint), MaxConstraintBytes)
	}
	return s.Sample.Validate()
}
