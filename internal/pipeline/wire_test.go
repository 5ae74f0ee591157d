package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/skulk/skulk/internal/engine/sample"
)

var testSpec = Spec{PromptLen: 5, Capacity: 69, Sample: sample.Params{Temperature: 0.8, TopP: 0.9, MinP: 0.05, TopK: 40,
	RepeatPenalty: 1.1, PresencePenalty: -0.5, FrequencyPenalty: 0.25, RepeatLastN: -1, Seed: 1<<63 + 5}}

// validObjects are one object of each kind, encoded.
func validObjects() map[string][]byte {
	return map[string][]byte{
		"open":    encodeObject(KindOpen, []entry{{seq: 7}}, 0, nil, nil, &testSpec),
		"prefill": encodeObject(KindPrefill, []entry{{seq: 7, pos: 3, rows: 2}}, 3, []float32{1, -2, 3.5, float32(math.Inf(1)), 0, -0}, nil, nil),
		"decode":  encodeObject(KindDecode, []entry{{seq: 7, pos: 9, rows: 1}, {seq: 1 << 40, pos: 0, rows: 1}}, 2, []float32{1, 2, 3, 4}, nil, nil),
		"token":   encodeObject(KindToken, []entry{{seq: 7, pos: 10, rows: 1}, {seq: 2, pos: 1, rows: 1}}, 0, nil, []int32{511, 0}, nil),
		"release": encodeObject(KindRelease, []entry{{seq: 7}, {seq: 8}}, 0, nil, nil, nil),
	}
}

func TestObjectRoundTrip(t *testing.T) {
	for name, b := range validObjects() {
		t.Run(name, func(t *testing.T) {
			o, err := decodeObject(b)
			if err != nil {
				t.Fatal(err)
			}
			again := encodeObject(o.kind, o.entries, o.width, o.hidden, o.tokens, &o.spec)
			if !bytes.Equal(again, b) {
				t.Fatalf("re-encoded\n%x\nwant\n%x", again, b)
			}
		})
	}
	o, _ := decodeObject(validObjects()["open"])
	if o.spec != testSpec {
		t.Fatalf("spec %+v, want %+v", o.spec, testSpec)
	}
	o, _ = decodeObject(validObjects()["decode"])
	if o.entries[1].seq != 1<<40 || o.width != 2 || o.hidden[3] != 4 {
		t.Fatalf("decode object %+v", o)
	}
}

// TestSpecCoversSampleParams fails when sample.Params grows a field that
// the open object does not carry to the last rank.
func TestSpecCoversSampleParams(t *testing.T) {
	if n := reflect.TypeFor[sample.Params]().NumField(); n != 9 {
		t.Fatalf("sample.Params has %d fields; putSpec and getSpec carry 9: extend the open object", n)
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
		{"version", mut("release", func(b []byte) []byte { b[4] = 2; return b })},
		{"kind_zero", mut("release", func(b []byte) []byte { b[5] = 0; return b })},
		{"kind_unknown", mut("release", func(b []byte) []byte { b[5] = 6; return b })},
		{"reserved", mut("release", func(b []byte) []byte { b[7] = 1; return b })},
		{"no_entries", mut("release", func(b []byte) []byte { le.PutUint32(b[8:], 0); return b[:headerLen] })},
		{"too_many_entries", mut("release", func(b []byte) []byte { le.PutUint32(b[8:], maxEntries+1); return b })},
		{"entries_past_end", mut("release", func(b []byte) []byte { le.PutUint32(b[8:], 3); return b })},
		{"open_two_entries", mut("release", func(b []byte) []byte { b[5] = byte(KindOpen); return b })},
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
		again := encodeObject(o.kind, o.entries, o.width, o.hidden, o.tokens, &o.spec)
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted\n%x\nre-encodes as\n%x", b, again)
		}
	})
}
