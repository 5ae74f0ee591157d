package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/vfs"
)

// TensorSums are the SHA-256 sums of a GGUF file's parts: the header (every
// byte before the tensor data section) and each tensor's bytes. With them a
// node can take a stage's tensors from a member that holds the file and
// verify each one on its own, without the rest of the file.
type TensorSums struct {
	HeaderBytes  int64       `json:"header_bytes"` // the header is [0, HeaderBytes)
	HeaderSHA256 string      `json:"header_sha256"`
	Tensors      []TensorSum `json:"tensors"` // in the header's order
}

// TensorSum is one tensor's place in the file and the sum of its bytes.
type TensorSum struct {
	Name   string `json:"name"`
	Offset int64  `json:"offset"` // absolute, from the start of the file
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// maxTensorName bounds a tensor name in a sidecar (GGUF names are short).
const maxTensorName = 256

// Validate checks that the sums describe parts of a file of size bytes:
// the header first, tensors after it and inside the file, sums well formed.
func (t *TensorSums) Validate(size int64) error {
	if t.HeaderBytes <= 0 || t.HeaderBytes > size || !isSHA256(t.HeaderSHA256) {
		return fmt.Errorf("tensor sums: bad header range or sum (%d bytes of %d)", t.HeaderBytes, size)
	}
	seen := make(map[string]bool, len(t.Tensors))
	for i, ts := range t.Tensors {
		switch {
		case ts.Name == "" || len(ts.Name) > maxTensorName || seen[ts.Name]:
			return fmt.Errorf("tensor sums: tensor %d: empty, long or repeated name", i)
		case ts.Offset < t.HeaderBytes || ts.Size < 0 || ts.Size > size-ts.Offset:
			return fmt.Errorf("tensor sums: tensor %s: [%d, +%d) is not in the data section of a %d-byte file", ts.Name, ts.Offset, ts.Size, size)
		case !isSHA256(ts.SHA256):
			return fmt.Errorf("tensor sums: tensor %s: bad sha256", ts.Name)
		}
		seen[ts.Name] = true
	}
	return nil
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// ComputeTensorSums reads the GGUF file at path once and sums its header
// and each tensor.
func ComputeTensorSums(ctx context.Context, path string) (*TensorSums, error) {
	g, err := gguf.Open(path) // parses and bounds-checks every tensor
	if err != nil {
		return nil, err
	}
	infos, dataOff := g.Tensors, g.DataOffset
	g.Close()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := func(off, n int64) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, off, n)); err != nil {
			return "", err
		}
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	ts := &TensorSums{HeaderBytes: dataOff}
	if ts.HeaderSHA256, err = sum(0, dataOff); err != nil {
		return nil, err
	}
	for _, ti := range infos {
		off := dataOff + int64(ti.Offset)
		s, err := sum(off, ti.Size)
		if err != nil {
			return nil, fmt.Errorf("tensor sums: %s: %w", ti.Name, err)
		}
		ts.Tensors = append(ts.Tensors, TensorSum{Name: ti.Name, Offset: off, Size: ti.Size, SHA256: s})
	}
	return ts, nil
}

// isGGUF says whether a card's file is a GGUF file (tensor sums apply).
func isGGUF(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".gguf") }

// TensorSums returns the verified installation of c and the manifest entry
// of its first file (the one a runner loads) with its tensor sums. A model installed before sums
// were recorded gets them now, once: they are computed and written into its
// sidecar.
func (s *Store) TensorSums(ctx context.Context, c Card) (Installation, ManifestEntry, error) {
	in, err := s.Locate(c)
	if err != nil {
		return Installation{}, ManifestEntry{}, err
	}
	sc, err := readSidecar(in.Dir)
	if err != nil {
		return Installation{}, ManifestEntry{}, err
	}
	if sc.Manifest[0].Tensors != nil {
		return in, sc.Manifest[0], nil
	}
	if !isGGUF(sc.Manifest[0].Path) {
		return Installation{}, ManifestEntry{}, fmt.Errorf("catalog: model %s: %s is not a GGUF file; it has no tensors to serve", c.ID, sc.Manifest[0].Path)
	}
	sums, err := ComputeTensorSums(ctx, in.Paths[0])
	if err != nil {
		return Installation{}, ManifestEntry{}, fmt.Errorf("catalog: tensor sums of %s: %w", c.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Re-read under the lock: the file must still be the one the manifest
	// verified, and another caller may have written the sums meanwhile.
	sc, err = readSidecar(in.Dir)
	if err != nil {
		return Installation{}, ManifestEntry{}, err
	}
	e := &sc.Manifest[0]
	if e.Tensors != nil {
		return in, *e, nil
	}
	fi, err := os.Stat(in.Paths[0])
	if err != nil {
		return Installation{}, ManifestEntry{}, err
	}
	if st := statOf(fi); st.size != e.Size || st.mtimeNs != e.ModTimeNs || st.inode != e.Inode {
		return Installation{}, ManifestEntry{}, &NotInstalledError{ID: c.ID, Dir: in.Dir, Reason: "the file changed while its tensor sums were computed"}
	}
	if err := sums.Validate(e.Size); err != nil {
		return Installation{}, ManifestEntry{}, err
	}
	e.Tensors = sums
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return Installation{}, ManifestEntry{}, err
	}
	if err := writeFileAtomic(filepath.Join(in.Dir, SidecarPath), b, 0o644); err != nil {
		return Installation{}, ManifestEntry{}, fmt.Errorf("catalog: record tensor sums of %s: %w", c.ID, vfs.NoSpace(err, in.Dir, "the sidecar of model "+c.ID))
	}
	return in, *e, nil
}

// readSidecar reads and decodes dir's sidecar.
func readSidecar(dir string) (Sidecar, error) {
	f, err := os.Open(filepath.Join(dir, SidecarPath))
	if err != nil {
		return Sidecar{}, err
	}
	defer f.Close()
	b, err := readLimited(f, maxSidecar)
	if err != nil {
		return Sidecar{}, fmt.Errorf("catalog: %s: %w", SidecarPath, err)
	}
	sc, err := DecodeSidecar(b)
	if err != nil {
		return Sidecar{}, fmt.Errorf("catalog: %s in %s: %w", SidecarPath, dir, err)
	}
	if len(sc.Manifest) == 0 {
		return Sidecar{}, errors.New("catalog: the sidecar lists no files")
	}
	return sc, nil
}
