package event

import (
	"bytes"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func TestSamplesCoverEveryKind(t *testing.T) {
	var evKinds, cmdKinds []Kind
	for _, ev := range sampleEvents() {
		evKinds = append(evKinds, ev.Kind())
	}
	for _, c := range sampleCommands() {
		cmdKinds = append(cmdKinds, c.Kind())
	}
	for _, tt := range []struct {
		name      string
		got, want []Kind
	}{{"events", evKinds, EventKinds()}, {"commands", cmdKinds, CommandKinds()}} {
		got, want := slices.Clone(tt.got), slices.Clone(tt.want)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: samples cover %v, kinds are %v", tt.name, got, want)
		}
	}
}

func TestSamplesValidate(t *testing.T) {
	for name, ev := range sampleEvents() {
		if err := ev.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, c := range sampleCommands() {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// mustEncode re-encodes a value so tests compare canonical bytes; that
// treats nil and empty slices alike, as the wire does.
func mustEncodeEvent(t *testing.T, ev Event) []byte {
	t.Helper()
	b, err := EncodeEvent(ev)
	if err != nil {
		t.Fatalf("EncodeEvent(%T): %v", ev, err)
	}
	return b
}

func TestEventRoundTrip(t *testing.T) {
	for _, name := range sortedKeys(sampleEvents()) {
		ev := sampleEvents()[name]
		t.Run(name, func(t *testing.T) {
			b := mustEncodeEvent(t, ev)
			again := mustEncodeEvent(t, ev)
			if !bytes.Equal(b, again) {
				t.Fatal("two encodings of one value differ")
			}
			got, err := DecodeEvent(b)
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if got.Kind() != ev.Kind() || !bytes.Equal(mustEncodeEvent(t, got), b) {
				t.Fatalf("CBOR round trip changed the event: %#v -> %#v", ev, got)
			}

			ie := IndexedEvent{Term: 7, Index: 42, Event: ev}
			ib, err := EncodeIndexed(ie)
			if err != nil {
				t.Fatal(err)
			}
			gotIE, err := DecodeIndexed(ib)
			if err != nil {
				t.Fatalf("DecodeIndexed: %v", err)
			}
			if gotIE.Term != 7 || gotIE.Index != 42 || !bytes.Equal(mustEncodeEvent(t, gotIE.Event), b) {
				t.Fatalf("indexed round trip: %+v", gotIE)
			}
		})
	}
}

func TestCommandRoundTrip(t *testing.T) {
	for _, name := range sortedKeys(sampleCommands()) {
		c := sampleCommands()[name]
		t.Run(name, func(t *testing.T) {
			b, err := EncodeCommand(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeCommand(b)
			if err != nil {
				t.Fatalf("DecodeCommand: %v", err)
			}
			b2, _ := EncodeCommand(got)
			if !bytes.Equal(b, b2) || got.CommandID() != c.CommandID() {
				t.Fatalf("CBOR round trip changed the command: %#v -> %#v", c, got)
			}
		})
	}
}

// verbatim is appended to a rawMap without re-encoding or validation.
type verbatim []byte

// rawMap encodes key/value pairs as a CBOR map in the given order, allowing
// the duplicates and extra keys that the encoder would never produce.
func rawMap(t *testing.T, kv ...any) cbor.RawMessage {
	t.Helper()
	if len(kv)%2 != 0 || len(kv)/2 > 23 {
		t.Fatalf("rawMap: %d items", len(kv))
	}
	out := []byte{0xa0 | byte(len(kv)/2)}
	for _, v := range kv {
		if raw, ok := v.(verbatim); ok {
			out = append(out, raw...)
			continue
		}
		b, err := encMode.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

func TestDecodeStrict(t *testing.T) {
	deleted := func(t *testing.T) cbor.RawMessage {
		return rawMap(t, "instance", "inst-1", "reason", "operator")
	}
	valid := mustEncodeEvent(t, InstanceDeleted{Instance: "inst-1", Reason: DeleteOperator})
	type want int
	const (
		unknownKind want = iota
		malformed
		invalid
	)
	tests := []struct {
		name  string
		input func(t *testing.T) []byte
		want  want
		as    any // a target for errors.As, or nil
	}{
		{"valid_control", func(t *testing.T) []byte { return valid }, -1, nil},
		{"unknown_kind", func(t *testing.T) []byte { return rawMap(t, "kind", "InstanceExploded", "body", deleted(t)) }, unknownKind, new(*UnknownKindError)},
		{"command_kind_as_event", func(t *testing.T) []byte { return rawMap(t, "kind", "DeleteInstance", "body", deleted(t)) }, unknownKind, nil},
		{"unknown_envelope_field", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", deleted(t), "x", 1)
		}, malformed, new(*cbor.UnknownFieldError)},
		{"unknown_body_field", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", rawMap(t, "instance", "inst-1", "reason", "operator", "force", true))
		}, malformed, new(*cbor.UnknownFieldError)},
		{"field_name_wrong_case", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", rawMap(t, "Instance", "inst-1", "reason", "operator"))
		}, malformed, new(*cbor.UnknownFieldError)},
		{"duplicate_envelope_key", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "kind", "InstanceDeleted", "body", deleted(t))
		}, malformed, new(*cbor.DupMapKeyError)},
		{"duplicate_body_key", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", rawMap(t, "instance", "inst-1", "instance", "inst-2", "reason", "operator"))
		}, malformed, new(*cbor.DupMapKeyError)},
		{"trailing_bytes", func(t *testing.T) []byte { return append(slices.Clone(valid), 0x00) }, malformed, new(*cbor.ExtraneousDataError)},
		{"two_envelopes", func(t *testing.T) []byte { return append(slices.Clone(valid), valid...) }, malformed, new(*cbor.ExtraneousDataError)},
		{"truncated", func(t *testing.T) []byte { return valid[:len(valid)-3] }, malformed, nil},
		{"empty", func(t *testing.T) []byte { return nil }, malformed, nil},
		{"too_large", func(t *testing.T) []byte { return make([]byte, MaxEncodedBytes+1) }, malformed, nil},
		{"not_a_map", func(t *testing.T) []byte { return []byte{0x01} }, malformed, nil},
		{"missing_body", func(t *testing.T) []byte { return rawMap(t, "kind", "InstanceDeleted") }, malformed, nil},
		{"null_body", func(t *testing.T) []byte { return rawMap(t, "kind", "TracingSet", "body", nil) }, malformed, nil},
		{"scalar_body", func(t *testing.T) []byte { return rawMap(t, "kind", "TracingSet", "body", true) }, malformed, nil},
		{"wrong_field_type", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", rawMap(t, "instance", 17, "reason", "operator"))
		}, malformed, nil},
		{"indefinite_length_body", func(t *testing.T) []byte {
			body := append([]byte{0xbf}, deleted(t)[1:]...)
			return rawMap(t, "kind", "InstanceDeleted", "body", verbatim(append(body, 0xff)))
		}, malformed, nil},
		{"tagged_body", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", verbatim(append([]byte{0xd8, 0x40}, deleted(t)...)))
		}, malformed, nil},
		{"invalid_utf8_reason", func(t *testing.T) []byte {
			body := rawMap(t, "instance", "inst-1", "reason", "operator")
			i := bytes.Index(body, []byte("operator"))
			body[i] = 0xff
			return rawMap(t, "kind", "InstanceDeleted", "body", body)
		}, malformed, nil},
		{"invalid_id", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", rawMap(t, "instance", "../x", "reason", "operator"))
		}, invalid, new(*InvalidError)},
		{"unknown_enum", func(t *testing.T) []byte {
			return rawMap(t, "kind", "InstanceDeleted", "body", rawMap(t, "instance", "inst-1", "reason", "bored"))
		}, invalid, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeEvent(tt.input(t))
			t.Logf("%v", err)
			switch tt.want {
			case -1:
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			case unknownKind:
				if !errors.Is(err, ErrUnknownKind) {
					t.Fatalf("got %v, want ErrUnknownKind", err)
				}
			case malformed:
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("got %v, want ErrMalformed", err)
				}
			case invalid:
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("got %v, want ErrInvalid", err)
				}
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Fatalf("got %v (%T), want it to wrap %T", err, err, tt.as)
			}
		})
	}
}

func TestDecodeCommandRejectsEventKind(t *testing.T) {
	_, err := DecodeCommand(mustEncodeEvent(t, TracingSet{Enabled: true}))
	var uk *UnknownKindError
	if !errors.As(err, &uk) || uk.Want != "command" || uk.Kind != KindTracingSet {
		t.Fatalf("got %v, want *UnknownKindError{TracingSet, command}", err)
	}
}

func TestDecodeIndexedRejectsZeroPosition(t *testing.T) {
	for _, ie := range []IndexedEvent{
		{Term: 0, Index: 1, Event: TracingSet{}},
		{Term: 1, Index: 0, Event: TracingSet{}},
	} {
		b, err := EncodeIndexed(ie)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeIndexed(b); !errors.Is(err, ErrInvalid) {
			t.Errorf("DecodeIndexed(term %d, index %d) = %v, want ErrInvalid", ie.Term, ie.Index, err)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
