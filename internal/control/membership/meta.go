package membership

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/hashicorp/memberlist"

	"github.com/skulk/skulk/internal/platform/ids"
)

// MetaLimit is memberlist's bound on node meta.
const MetaLimit = memberlist.MetaMaxSize

// metaFormat is the first byte of encoded meta. A new layout takes a new
// number (and bumps clusterkey.NetworkVersion).
const metaFormat = 1

// maxAddrs bounds each address list in meta.
const maxAddrs = 8

// Meta is what a node gossips about itself.
type Meta struct {
	Node            ids.NodeID
	NetworkVersion  string
	SoftwareVersion string
	Commit          string
	PublicKey       ed25519.PublicKey
	API             []netip.AddrPort // HTTP API addresses
	QUIC            []netip.AddrPort // transport endpoint addresses
}

// ErrMeta is matched by every meta encoding or decoding error.
var ErrMeta = errors.New("membership: bad node meta")

// MetaTooLargeError reports meta that does not fit memberlist's limit.
type MetaTooLargeError struct{ Size, Limit int }

func (e *MetaTooLargeError) Error() string {
	return fmt.Sprintf("membership: node meta is %d bytes, limit %d", e.Size, e.Limit)
}

func (e *MetaTooLargeError) Is(target error) bool { return target == ErrMeta }

// Encode returns the compact binary form of m:
//
//	format(1) | str node | str network version | str software | str commit |
//	public key (32) | n(1) addr... (API) | n(1) addr... (QUIC)
//
// where str is a uvarint length and bytes, and addr is 4 or 16 IP bytes
// after a length byte, then a 2-byte big-endian port.
func (m Meta) Encode() ([]byte, error) {
	if err := m.Node.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMeta, err)
	}
	if len(m.PublicKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: public key has %d bytes", ErrMeta, len(m.PublicKey))
	}
	if m.NetworkVersion == "" {
		return nil, fmt.Errorf("%w: no network version", ErrMeta)
	}
	if len(m.API) > maxAddrs || len(m.QUIC) > maxAddrs {
		return nil, fmt.Errorf("%w: more than %d addresses", ErrMeta, maxAddrs)
	}
	b := []byte{metaFormat}
	for _, s := range []string{string(m.Node), m.NetworkVersion, m.SoftwareVersion, m.Commit} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, m.PublicKey...)
	for _, list := range [][]netip.AddrPort{m.API, m.QUIC} {
		b = append(b, byte(len(list)))
		for _, ap := range list {
			if !ap.IsValid() {
				return nil, fmt.Errorf("%w: invalid address %v", ErrMeta, ap)
			}
			ip := ap.Addr().Unmap().AsSlice()
			b = append(b, byte(len(ip)))
			b = append(b, ip...)
			b = binary.BigEndian.AppendUint16(b, ap.Port())
		}
	}
	if len(b) > MetaLimit {
		return nil, &MetaTooLargeError{Size: len(b), Limit: MetaLimit}
	}
	return b, nil
}

// DecodeMeta parses Encode's output strictly.
func DecodeMeta(b []byte) (Meta, error) {
	var m Meta
	d := decoder{b: b}
	if f := d.byte(); f != metaFormat {
		return m, fmt.Errorf("%w: format %d", ErrMeta, f)
	}
	m.Node = ids.NodeID(d.str())
	m.NetworkVersion = d.str()
	m.SoftwareVersion = d.str()
	m.Commit = d.str()
	m.PublicKey = ed25519.PublicKey(d.bytes(ed25519.PublicKeySize))
	m.API = d.addrs()
	m.QUIC = d.addrs()
	if d.err != nil {
		return Meta{}, fmt.Errorf("%w: %v", ErrMeta, d.err)
	}
	if len(d.b) != 0 {
		return Meta{}, fmt.Errorf("%w: %d trailing bytes", ErrMeta, len(d.b))
	}
	if err := m.Node.Validate(); err != nil {
		return Meta{}, fmt.Errorf("%w: %v", ErrMeta, err)
	}
	return m, nil
}

// decoder reads fields, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated %s", what)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bytes(n int) []byte {
	if n < 0 || len(d.b) < n {
		d.fail("field")
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("string")
		return ""
	}
	return string(d.bytes(int(n)))
}

func (d *decoder) addrs() []netip.AddrPort {
	n := int(d.byte())
	if n > maxAddrs {
		if d.err == nil {
			d.err = fmt.Errorf("%d addresses", n)
		}
		return nil
	}
	var out []netip.AddrPort
	for range n {
		l := int(d.byte())
		if l != 4 && l != 16 {
			if d.err == nil {
				d.err = fmt.Errorf("address of %d bytes", l)
			}
			return nil
		}
		ip, _ := netip.AddrFromSlice(d.bytes(l))
		pb := d.bytes(2)
		if d.err != nil {
			return nil
		}
		out = append(out, netip.AddrPortFrom(ip, binary.BigEndian.Uint16(pb)))
	}
	return out
}
