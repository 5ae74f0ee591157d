package membership

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestMetaRoundTripAndSize(t *testing.T) {
	m := testMeta("0b1e5c2a-7c1d-4e7f-9a55-5f2d3c4b6a70")
	m.NetworkVersion = "skulk-net-1"
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeMeta(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip\n%+v\nwant %+v", got, m)
	}
	// A realistic meta leaves most of the 512 bytes free.
	if len(b) > 200 {
		t.Errorf("meta is %d bytes", len(b))
	}
	for i := range b {
		if _, err := DecodeMeta(b[:i]); !errors.Is(err, ErrMeta) {
			t.Fatalf("a %d-byte prefix decoded: %v", i, err)
		}
	}
	if _, err := DecodeMeta(append(b, 0)); !errors.Is(err, ErrMeta) {
		t.Fatal("trailing bytes decoded")
	}

	m.Commit = strings.Repeat("c", MetaLimit)
	var tooBig *MetaTooLargeError
	if _, err := m.Encode(); !errors.As(err, &tooBig) || tooBig.Limit != MetaLimit || !errors.Is(err, ErrMeta) {
		t.Fatalf("oversized meta: %v", err)
	}
	m.Commit = ""
	m.QUIC = make([]netip.AddrPort, maxAddrs+1)
	if _, err := m.Encode(); !errors.Is(err, ErrMeta) {
		t.Fatalf("too many addresses: %v", err)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	m := testMeta("node-a")
	m.NetworkVersion = "v"
	b, _ := m.Encode()
	f.Add(b)
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			return
		}
		again, err := m.Encode()
		if err != nil {
			return // decodable but not encodable (e.g. a short key): fine
		}
		if _, err := DecodeMeta(again); err != nil {
			t.Fatalf("re-encoded meta does not decode: %v", err)
		}
	})
}
