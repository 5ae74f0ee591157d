// Package clusterkey holds the cluster key and the network version, and
// derives from them every secret the wire uses: the memberlist gossip key and
// the QUIC handshake proof key. Two nodes with a different key or a different
// network version derive different secrets, so they refuse each other at once
// instead of half-working (seed: "derives its private-network key from a
// wire version constant").
//
// A Key is an immutable value, safe to share between goroutines. It never
// prints its secret: String, GoString and LogValue redact it. Only the
// transport and membership packages (and the composition root) import it.
package clusterkey

import (
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
)

// NetworkVersion is the wire version of this build. Any change to wire
// behaviour (gossip encoding, node meta layout, the transport handshake, a
// plane's ALPN protocol) bumps it in the same commit.
const NetworkVersion = "skulk-net-1"

// EnvVar names the environment variable that carries the cluster key. The
// config package reads it; nothing below the composition root reads the
// environment.
const EnvVar = "SKULK_CLUSTER_KEY"

// maxNetworkVersion bounds the network version so that it fits the transport
// hello (one length byte) with room to spare.
const maxNetworkVersion = 64

// Purposes passed to Derive. Each secret on the wire has its own.
const (
	PurposeGossip    = "gossip"    // memberlist keyring (AES-256)
	PurposeTransport = "transport" // QUIC handshake proof (HMAC-SHA256)
	PurposeDiscovery = "discovery" // the public fingerprint members announce over mDNS
	PurposeAPIKeys   = "api-keys"  // HMAC key of the API key digests the cluster shares
)

// ErrInvalid is matched (errors.Is) by the errors New returns.
var ErrInvalid = errors.New("clusterkey: invalid")

// Key is a cluster key bound to a network version.
type Key struct {
	secret         string // the operator's key, or the zero-config default
	networkVersion string
	zeroConfig     bool
}

// New binds secret (SKULK_CLUSTER_KEY) to networkVersion. An empty secret is
// refused: call Default for the zero-config key.
func New(secret, networkVersion string) (Key, error) {
	if secret == "" {
		return Key{}, fmt.Errorf("%w: empty cluster key (unset it to use the zero-config default)", ErrInvalid)
	}
	if err := checkVersion(networkVersion); err != nil {
		return Key{}, err
	}
	return Key{secret: secret, networkVersion: networkVersion}, nil
}

// Default is the open-cluster key: it is derived from the public network
// version alone, so every node of the same build that reaches the gossip port
// joins. Only `skulk run --open-cluster` uses it; builds of another network
// version are still refused.
func Default(networkVersion string) (Key, error) {
	if err := checkVersion(networkVersion); err != nil {
		return Key{}, err
	}
	return Key{secret: "skulk/zero-config/" + networkVersion, networkVersion: networkVersion, zeroConfig: true}, nil
}

func checkVersion(v string) error {
	if v == "" || len(v) > maxNetworkVersion {
		return fmt.Errorf("%w: network version %q must have 1..%d bytes", ErrInvalid, v, maxNetworkVersion)
	}
	return nil
}

// Secret returns the key itself, for the one place that must show it: the
// invite line a member prints for the operator. Never log it.
func (k Key) Secret() string { return k.secret }

// NetworkVersion returns the network version the key is bound to.
func (k Key) NetworkVersion() string { return k.networkVersion }

// ZeroConfig reports whether k is the default key of its network version.
func (k Key) ZeroConfig() bool { return k.zeroConfig }

// Valid reports whether k came from New or Default (the zero Key does not).
func (k Key) Valid() bool { return k.secret != "" && k.networkVersion != "" }

// Derive returns the 32-byte secret for purpose:
// HKDF-SHA256(secret = cluster key, salt = none, info = "skulk/" + purpose +
// "/" + network version). It panics on the zero Key, which is a programming
// error that Valid lets the caller rule out.
func (k Key) Derive(purpose string) [32]byte {
	if !k.Valid() {
		panic("clusterkey: Derive on the zero Key")
	}
	b, err := hkdf.Key(sha256.New, []byte(k.secret), nil, "skulk/"+purpose+"/"+k.networkVersion, 32)
	if err != nil { // only for lengths HKDF cannot produce; 32 always fits
		panic("clusterkey: " + err.Error())
	}
	var out [32]byte
	copy(out[:], b)
	return out
}

// String describes the key without its secret.
func (k Key) String() string {
	kind := "set"
	if k.zeroConfig {
		kind = "zero-config"
	}
	if !k.Valid() {
		kind = "unset"
	}
	return fmt.Sprintf("cluster key (%s, network %s, secret redacted)", kind, k.networkVersion)
}

// GoString redacts the secret under %#v too.
func (k Key) GoString() string { return k.String() }

// LogValue redacts the secret in structured logs.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }
