package clusterkey

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
)

// InvitePrefix starts every invite line. The digit is the invite format's
// version, so a later format can be told apart and refused with a reason.
const InvitePrefix = "skulk1:"

// maxInvite bounds an invite line: a key, a few peer hints and the prefix
// fit in well under a kilobyte.
const maxInvite = 4096

// ErrBadInvite is matched (errors.Is) by the errors ParseInvite returns.
var ErrBadInvite = errors.New("clusterkey: not a valid invite")

// Invite is what a node needs to join a cluster: the cluster key and hints
// of where to find a member (gossip addresses). On a LAN the hints may be
// empty: mDNS finds the members of the same cluster.
type Invite struct {
	Secret string   // the cluster key itself
	Peers  []string // gossip addresses HOST:PORT of members
}

// invitePayload is the invite's wire shape (short field names: the line is
// copied by hand).
type invitePayload struct {
	K string   `json:"k"`
	P []string `json:"p,omitempty"`
}

// String encodes the invite as one line: InvitePrefix and the base64url
// (unpadded) JSON payload.
func (inv Invite) String() string {
	b, _ := json.Marshal(invitePayload{K: inv.Secret, P: inv.Peers}) // strings only: cannot fail
	return InvitePrefix + base64.RawURLEncoding.EncodeToString(b)
}

// ParseInvite decodes an invite line. Its errors never quote the line,
// which carries the secret.
func ParseInvite(line string) (Invite, error) {
	line = strings.TrimSpace(line)
	if len(line) > maxInvite {
		return Invite{}, fmt.Errorf("%w: %d bytes is too long for an invite", ErrBadInvite, len(line))
	}
	rest, ok := strings.CutPrefix(line, InvitePrefix)
	if !ok {
		return Invite{}, fmt.Errorf("%w: an invite starts with %q (run `skulk cluster invite` on a member to print one)", ErrBadInvite, InvitePrefix)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return Invite{}, fmt.Errorf("%w: the text after %q is not base64url (was the line cut or wrapped when copied?)", ErrBadInvite, InvitePrefix)
	}
	var p invitePayload
	if err := json.Unmarshal(b, &p); err != nil {
		return Invite{}, fmt.Errorf("%w: the payload does not decode (was the line cut when copied?)", ErrBadInvite)
	}
	if len(p.K) < MinSecretLen {
		return Invite{}, fmt.Errorf("%w: it carries no cluster key of at least %d bytes", ErrBadInvite, MinSecretLen)
	}
	for _, peer := range p.P {
		if _, _, err := net.SplitHostPort(peer); err != nil {
			return Invite{}, fmt.Errorf("%w: peer hint %q is not HOST:PORT", ErrBadInvite, peer)
		}
	}
	return Invite{Secret: p.K, Peers: p.P}, nil
}

// MinSecretLen is the shortest cluster key a generated one or an invite may
// carry. Operators' SKULK_CLUSTER_KEY values are not held to it (they may
// predate it), but the node warns about short ones.
const MinSecretLen = 16

// Generate returns a new random cluster key: 256 bits, base64url.
func Generate() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Fingerprint is a short public tag of the key for discovery: members
// announce it over mDNS so that a node skips the members of other clusters
// instead of knocking on them. It is an HKDF output, so it reveals nothing
// of the key.
func (k Key) Fingerprint() string {
	d := k.Derive(PurposeDiscovery)
	return base64.RawURLEncoding.EncodeToString(d[:9])
}
