package event

import (
	"bytes"
	"errors"
	"testing"
)

// typedDecodeError fails the test unless err is one of the package's typed
// decode failures: callers must always be able to branch on it.
func typedDecodeError(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownKind) && !errors.Is(err, ErrInvalid) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
}

func addEventSeeds(f *testing.F) {
	for _, ev := range sampleEvents() {
		b, err := EncodeEvent(ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0xbf, 0xff})
	f.Add([]byte{0xa2, 0x64, 'k', 'i', 'n', 'd', 0x60, 0x64, 'b', 'o', 'd', 'y', 0xa0})
}

// FuzzDecodeEvent: decoding never panics, fails only with typed errors, and
// whatever decodes re-encodes to bytes that decode to the same bytes again.
func FuzzDecodeEvent(f *testing.F) {
	addEventSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := DecodeEvent(b)
		if err != nil {
			typedDecodeError(t, err)
			return
		}
		enc, err := EncodeEvent(ev)
		if err != nil {
			t.Fatalf("re-encoding a decoded %s: %v", ev.Kind(), err)
		}
		ev2, err := DecodeEvent(enc)
		if err != nil {
			t.Fatalf("canonical bytes of a decoded %s do not decode: %v", ev.Kind(), err)
		}
		enc2, _ := EncodeEvent(ev2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not a fixed point for %s", ev.Kind())
		}
		if err := Admit(Source{Role: RoleMaster, Node: "m"}, ev); err != nil {
			t.Fatalf("a decoded event fails admission for the master: %v", err)
		}
	})
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range sampleCommands() {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			typedDecodeError(t, err)
			return
		}
		enc, err := EncodeCommand(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeCommand(enc); err != nil {
			t.Fatalf("canonical bytes of a decoded %s do not decode: %v", c.Kind(), err)
		}
	})
}

func FuzzDecodeIndexed(f *testing.F) {
	for _, ev := range sampleEvents() {
		b, err := EncodeIndexed(IndexedEvent{Term: 2, Index: 9, Event: ev})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ie, err := DecodeIndexed(b)
		if err != nil {
			typedDecodeError(t, err)
			return
		}
		enc, err := EncodeIndexed(ie)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeIndexed(enc); err != nil {
			t.Fatalf("canonical bytes do not decode: %v", err)
		}
	})
}
