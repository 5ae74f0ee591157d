package ids

import (
	"encoding/hex"
	"fmt"
	"io"
)

// Minted lists the identity types that are created fresh rather than named
// by an operator. InstanceID is absent on purpose: it is derived from the
// creating command with CommandID.Instance.
type Minted interface {
	NodeID | CommandID | RunnerID | TaskID
}

// New returns a fresh random identity in RFC 9562 version-4 UUID form, read
// from r. The caller injects the randomness (crypto/rand.Reader in
// production, a seeded source in tests) so that this package holds no global
// generator.
func New[T Minted](r io.Reader) (T, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("ids: reading randomness: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 9562 variant
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return T(s[:]), nil
}
