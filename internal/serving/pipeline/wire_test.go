package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
)

var testSpec = Spec{PromptLen: 5, Capacity: 69, Sample: sample.Params{Temperature: 0.8, TopP: 0.9, MinP: 0.05, TopK: 40,
	RepeatPenalty: 1.1, PresencePenalty: -0.5, FrequencyPenalty: 0.25, RepeatLastN: -1, Seed: 1<<63 + 5}}

// constrainedSpec asks for logprobs with 3 alternatives and carries a
// constraint.
var constrainedSpec = Spec{PromptLen: 2, Capacity: 10, Sample: sample.Params{Seed: 3}, Logprobs: true, TopLogprobs: 3,
	Constraint: []byte(`{"type":"object","properties":{"a":{"type":"string"}}}`)}

// validObjects are one object of each kind (and of each form of the open
// and token objects), encoded.
func validObjects() map[string][]byte {
	nan := float32(math.NaN())
	return map[string][]byte{
		"open":             encodeObject(&object{kind: KindOpen, entries: []entry{{seq: 7}}, spec: testSpec}),
		"open_constrained": encodeObject(&object{kind: KindOpen, entries: []entry{{seq: 8}}, spec: constrainedSpec}),
		"prefill":          encodeObject(&object{kind: KindPrefill, entries: []entry{{seq: 7, pos: 3, rows: 2}}, width: 3, hidden: []float32{1, -2, 3.5, float32(math.Inf(1)), 0, -0}}),
		"decode":           encodeObject(&object{kind: KindDecode, entries: []entry{{seq: 7, pos: 9, rows: 1}, {seq: 1 << 40, pos: 0, rows: 1}}, width: 2, hidden: []float32{1, 2, 3, 4}}),
		"token":            encodeObject(&object{kind: KindToken, entries: []entry{{seq: 7, pos: 10, rows: 1}, {seq: 2, pos: 1, rows: 1}}, tokens: []int32{511, 0}}),
		// Two tokens with their logprob and two alternatives each: the
		// second's padded, and a token the constraint failed on.
		"token_logprobs": encodeObject(&object{kind: KindToken, entries: []entry{{seq: 7, pos: 10, rows: 1}, {seq: 2, pos: 1, rows: 1}, {seq: 3, pos: 4, rows: 1}},
			width: 3, tokens: []int32{511, 0, tokenConstraintFailed}, records: []sample.Logprob{
				{ID: 511, Logprob: -0.25}, {ID: 511, Logprob: -0.25}, {ID: 4, Logprob: -3},
				{ID: 0, Logprob: nan}, {ID: -1}, {ID: -1},
				{ID: tokenConstraintFailed}, {ID: -1}, {ID: -1}}}),
		"release":        encodeObject(&object{kind: KindRelease, entries: []entry{{seq: 7}}}),
		"release_traced": encodeObject(&object{kind: KindRelease, entries: []entry{{seq: 7}}, timings: testTimings[:1]}),
		"report":         encodeObject(&object{kind: KindReport, entries: []entry{{seq: 7}}, timings: testTimings}),
	}
}

// testTimings are two ranks' timings of a traced sequence.
var testTimings = []sequence.RankTiming{
	{Rank: 0, Opened: time.Unix(0, 1_700_000_000_000_000_000), Released: time.Unix(0, 1_700_000_000_250_000_000),
		PrefillRows: 12, PrefillBusy: 30 * time.Millisecond, DecodeSteps: 7, DecodeBusy: 21 * time.Millisecond},
	{Rank: 1, Opened: time.Unix(0, 1_700_000_000_001_000_000), Released: time.Unix(0, 1_700_000_000_251_000_000),
		PrefillRows: 12, PrefillBusy: 31 * time.Millisecond, DecodeSteps: 8, DecodeBusy: 40 * time.Millisecond},
}

func TestObjectRoundTrip(t *testing.T) {
	for name, b := range validObjects() {
		t.Run(name, func(t *testing.T) {
			o, err := decodeObject(b)
			if err != nil {
				t.Fatal(err)
			}
			again := encodeObject(&o)
			if !bytes.Equal(again, b) {
				t.Fatalf("re-encoded\n%x\nwant\n%x", again, b)
			}
		})
	}
	for name, want := range map[string]Spec{"open": testSpec, "open_constrained": constrainedSpec} {
		o, _ := decodeObject(validObjects()[name])
		if !reflect.DeepEqual(o.spec, want) {
			t.Fatalf("%s: spec %+v, want %+v", name, o.spec, want)
		}
	}
	o, _ := decodeObject(validObjects()["token_logprobs"])
	if o.width != 3 || len(o.records) != 9 || o.records[2] != (sample.Logprob{ID: 4, Logprob: -3}) || o.tokens[2] != tokenConstraintFailed {
		t.Fatalf("token object %+v", o)
	}
	o, _ = decodeObject(validObjects()["decode"])
	if o.entries[1].seq != 1<<40 || o.width != 2 || o.hidden[3] != 4 {
		t.Fatalf("decode object %+v", o)
	}
	o, _ = decodeObject(validObjects()["report"])
	if len(o.timings) != 2 {
		t.Fatalf("report object %+v", o)
	}
	for i, got := range o.timings {
		want := testTimings[i]
		if !got.Opened.Equal(want.Opened) || !got.Released.Equal(want.Released) {
			t.Fatalf("timing %d: %+v, want %+v", i, got, want)
		}
		got.Opened, got.Released = want.Opened, want.Released
		if got != want {
			t.Fatalf("timing %d: %+v, want %+v", i, got, want)
		}
	}
}

// TestSpecCoversSampleParams fails when sample.Params grows a field that
// the open object does not carry to the last rank.
func TestSpecCoversSampleParams(t *testing.T) {
	if n := reflect.TypeFor[sample.Params]().NumField(); n != 9 {
		t.Fatalf("sample.Params has %d fields; putSpec and getSpec carry 9: extend the open object", n)
	}
	if n := reflect.TypeFor[Spec]().NumField(); n != 7 {
		t.Fatalf("Spec has %d fields; putSpec and getSpec carry 7: extend the open object", n)
	}
}

func TestObjectRejects(t *testing.T) {
	le := binary.LittleEndian
	mut := func(name string, f func(b []byte) []byte) func() []byte {
		return func() []byte { return f(bytes.Clone(validObjects()[name])) }
	}
	for _, c := range []struct {
		name string
		b    func() []byte
	}{
		{"empty", func() []byte { return nil }},
		{"short_header", mut("release", func(b []byte) []byte { return b[:15] })},
		{"magic", mut("release", func(b []byte) []byte { b[0] ^= 1; return b })},
		{"version_1", mut("release", func(b []byte) []byte { b[4] = 1; return b })},
		{"version_2", mut("release", func(b []byte) []byte { b[4] = 2; return b })},
		{"version_4", mut("release", func(b []byte) []byte { b[4] = 4; return b })},
		{"kind_zero", mut("release", func(b []byte) []byte { b[5] = 0; return b })},
		{"kind_unknown", mut("release", func(b []byte) []byte { b[5] = 7; return b })},
		{"reserved", mut("release", func(b []byte) []byte { b[7] = 1; return b })},
		{"no_entries", mut("release", func(b []byte) []byte { le.PutUint32(b[8:], 0); return b[:headerLen] })},
		{"too_many_entries", mut("release", func(b []byte) []byte { le.PutUint32(b[8:], maxEntries+1); return b })},
		{"entries_past_end", mut("release", func(b []byte) []byte { le.PutUint32(b[8:], 3); return b })},
		{"open_two_entries", mut("decode", func(b []byte) []byte { b[5] = byte(KindOpen); le.PutUint32(b[12:], 0); return b })},
		{"release_two_entries", mut("decode", func(b []byte) []byte { b[5] = byte(KindRelease); le.PutUint32(b[12:], 0); return b })},
		{"report_no_timings", mut("release", func(b []byte) []byte { b[5] = byte(KindReport); return b })},
		{"report_too_many_timings", mut("report", func(b []byte) []byte { le.PutUint32(b[12:], maxRanks+1); return b })},
		{"report_timings_short", mut("report", func(b []byte) []byte { return b[:len(b)-1] })},
		{"timing_reserved", mut("release_traced", func(b []byte) []byte { b[headerLen+entryLen+12] = 1; return b })},
		{"timing_rank_range", mut("release_traced", func(b []byte) []byte { le.PutUint32(b[headerLen+entryLen:], maxRanks); return b })},
		{"timing_released_before_opened", mut("release_traced", func(b []byte) []byte { le.PutUint64(b[headerLen+entryLen+24:], 1); return b })},
		{"timing_negative_busy", mut("release_traced", func(b []byte) []byte { le.PutUint64(b[headerLen+entryLen+40:], math.MaxUint64); return b })},
		{"spec_unknown_flag", mut("open", func(b []byte) []byte { b[headerLen+entryLen+50] = 2; return b })},
		{"prefill_two_entries", mut("decode", func(b []byte) []byte { b[5] = byte(KindPrefill); return b })},
		{"token_with_width", mut("token", func(b []byte) []byte { le.PutUint32(b[12:], 1); return b })},
		{"decode_without_width", mut("decode", func(b []byte) []byte { le.PutUint32(b[12:], 0); return b })},
		{"decode_two_rows", mut("decode", func(b []byte) []byte { le.PutUint32(b[headerLen+12:], 2); return b })},
		{"release_with_rows", mut("release", func(b []byte) []byte { le.PutUint32(b[headerLen+12:], 1); return b })},
		{"prefill_no_rows", mut("prefill", func(b []byte) []byte { le.PutUint32(b[headerLen+12:], 0); return b })},
		{"prefill_rows_past_payload", mut("prefill", func(b []byte) []byte { le.PutUint32(b[headerLen+12:], 3); return b })},
		{"prefill_huge_width", mut("prefill", func(b []byte) []byte { le.PutUint32(b[12:], math.MaxUint32); return b })},
		{"position_out_of_range", mut("token", func(b []byte) []byte { le.PutUint32(b[headerLen+8:], math.MaxUint32); return b })},
		{"payload_short", mut("decode", func(b []byte) []byte { return b[:len(b)-4] })},
		{"payload_long", mut("token", func(b []byte) []byte { return append(b, 0, 0, 0, 0) })},
		{"release_payload", mut("release", func(b []byte) []byte { return append(b, 0) })},
		{"spec_capacity", mut("open", func(b []byte) []byte { le.PutUint32(b[headerLen+entryLen+4:], 5); return b })},
		{"spec_no_prompt", mut("open", func(b []byte) []byte { le.PutUint32(b[headerLen+entryLen:], 0); return b })},
		{"spec_nan_temperature", mut("open", func(b []byte) []byte {
			le.PutUint32(b[headerLen+entryLen+8:], math.Float32bits(float32(math.NaN())))
			return b
		})},
		{"spec_negative_top_k", mut("open", func(b []byte) []byte { le.PutUint32(b[headerLen+entryLen+20:], math.MaxUint32); return b })},
		{"spec_logprobs_flag", mut("open", func(b []byte) []byte { b[headerLen+entryLen+48] = 2; return b })},
		{"spec_top_without_logprobs", mut("open", func(b []byte) []byte { b[headerLen+entryLen+49] = 1; return b })},
		{"spec_too_many_top", mut("open_constrained", func(b []byte) []byte { b[headerLen+entryLen+49] = MaxTopLogprobs + 1; return b })},
		{"spec_reserved", mut("open", func(b []byte) []byte { b[headerLen+entryLen+51] = 1; return b })},
		{"constraint_short", mut("open_constrained", func(b []byte) []byte { return b[:len(b)-1] })},
		{"constraint_long", mut("open_constrained", func(b []byte) []byte { return append(b, '}') })},
		{"constraint_length_huge", mut("open_constrained", func(b []byte) []byte {
			le.PutUint32(b[headerLen+entryLen+52:], math.MaxUint32)
			return b
		})},
		{"constraint_too_large", func() []byte {
			s := testSpec
			s.Constraint = make([]byte, MaxConstraintBytes+1)
			return encodeObject(&object{kind: KindOpen, entries: []entry{{seq: 1}}, spec: s})
		}},
		{"token_records_short", mut("token_logprobs", func(b []byte) []byte { return b[:len(b)-recordLen] })},
		{"token_too_many_records", mut("token_logprobs", func(b []byte) []byte { le.PutUint32(b[12:], 2+MaxTopLogprobs); return b })},
		{"token_first_record_other_id", mut("token_logprobs", func(b []byte) []byte {
			le.PutUint32(b[len(b)-9*recordLen:], 510)
			return b
		})},
		{"token_record_id_below_padding", mut("token_logprobs", func(b []byte) []byte {
			le.PutUint32(b[len(b)-recordLen:], math.MaxUint32-1) // -2
			return b
		})},
		{"token_record_after_padding", mut("token_logprobs", func(b []byte) []byte {
			le.PutUint32(b[len(b)-4*recordLen:], 9) // the second entry's last alternative
			return b
		})},
		{"token_padding_logprob", mut("token_logprobs", func(b []byte) []byte {
			le.PutUint32(b[len(b)-recordLen+4:], math.Float32bits(-1))
			return b
		})},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeObject(c.b())
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ProtocolError", err)
			}
		})
	}
}

// FuzzDecodeObject: decoding never panics, and what it accepts encodes
// back to the same bytes (the format has one encoding per object).
func FuzzDecodeObject(f *testing.F) {
	for _, b := range validObjects() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeObject(b)
		if err != nil {
			return
		}
		again := encodeObject(&o)
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted\n%x\nre-encodes as\n%x", b, again)
		}
	})
}
