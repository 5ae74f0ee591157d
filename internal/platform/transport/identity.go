package transport

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/skulk/skulk/internal/platform/ids"
)

// KeyFile is the node's private key in its home directory: PEM PKCS#8
// Ed25519, mode 0600.
const KeyFile = "node.key"

// certLifetime bounds the self-signed certificate minted at every start.
// Peers do not check validity dates (the key is pinned through membership),
// but a certificate should still not claim forever.
const certLifetime = 10 * 365 * 24 * time.Hour

// Identity is a node's long-lived key and the certificate made from it. It
// is immutable after LoadIdentity.
type Identity struct {
	node ids.NodeID
	key  ed25519.PrivateKey
	cert tls.Certificate
}

// LoadIdentity reads the node key from home, creating it (0600, written
// atomically) on first start, and mints a self-signed certificate whose
// common name is node. A key file readable by group or others is narrowed to
// 0600.
func LoadIdentity(home string, node ids.NodeID) (*Identity, error) {
	if err := node.Validate(); err != nil {
		return nil, fmt.Errorf("transport: identity: %w", err)
	}
	path := filepath.Join(home, KeyFile)
	key, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = createKey(path)
	}
	if err != nil {
		return nil, err
	}
	cert, err := selfSigned(node, key)
	if err != nil {
		return nil, err
	}
	return &Identity{node: node, key: key, cert: cert}, nil
}

// Node returns the node id the certificate names.
func (i *Identity) Node() ids.NodeID { return i.node }

// PublicKey returns the key that membership gossips in node meta.
func (i *Identity) PublicKey() ed25519.PublicKey {
	return i.key.Public().(ed25519.PublicKey)
}

func readKey(path string) (ed25519.PrivateKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("transport: narrowing %s to 0600: %w", path, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("transport: reading node key: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("transport: %s: not a PEM PRIVATE KEY", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("transport: %s: %w", path, err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("transport: %s: key is %T, want Ed25519", path, k)
	}
	return ek, nil
}

func createKey(path string) (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("transport: generating node key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("transport: encoding node key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transport: node key directory: %w", err)
	}
	f, err := os.CreateTemp(dir, KeyFile+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("transport: writing node key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	err = f.Chmod(0o600)
	if err == nil {
		err = pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("transport: writing node key: %w", err)
	}
	return key, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func selfSigned(node ids.NodeID, key ed25519.PrivateKey) (tls.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: string(node)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("transport: self-signed certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// peerIdentity extracts the node id and key from a peer's certificate chain:
// exactly one self-signed Ed25519 certificate naming a valid node id. Key
// possession is proven by the TLS handshake itself.
func peerIdentity(rawCerts [][]byte) (ids.NodeID, ed25519.PublicKey, error) {
	if len(rawCerts) != 1 {
		return "", nil, fmt.Errorf("%w: want one certificate, got %d", ErrPeerRejected, len(rawCerts))
	}
	c, err := x509.ParseCertificate(rawCerts[0])
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrPeerRejected, err)
	}
	pub, ok := c.PublicKey.(ed25519.PublicKey)
	if !ok {
		return "", nil, fmt.Errorf("%w: certificate key is %T, want Ed25519", ErrPeerRejected, c.PublicKey)
	}
	if err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
		return "", nil, fmt.Errorf("%w: certificate is not self-signed: %v", ErrPeerRejected, err)
	}
	node, err := ids.ParseNodeID(c.Subject.CommonName)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrPeerRejected, err)
	}
	return node, pub, nil
}
