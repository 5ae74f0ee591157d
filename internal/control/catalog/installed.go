package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// SidecarPath is where a complete artifact directory keeps its installed
// card, relative to the directory.
const SidecarPath = ".skulk/installed-card.json"

// SidecarVersion is the sidecar format this package writes and reads.
const SidecarVersion = 1

// maxSidecar bounds a sidecar file (a card plus a manifest of a few entries).
const maxSidecar = 4 << 20

// Sidecar is the content of .skulk/installed-card.json: the full card of the
// artifact beside it and a SHA-256 manifest of every file it needs.
type Sidecar struct {
	Version  int             `json:"version"`
	Card     Card            `json:"card"`
	Manifest []ManifestEntry `json:"manifest"`
}

// ManifestEntry is one verified file. ModTimeNs and Inode record the file's
// identity when it was verified: while size, mtime and inode still match, the
// file is trusted without re-hashing.
type ManifestEntry struct {
	Path      string `json:"path"` // relative to the artifact directory
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	ModTimeNs int64  `json:"mtime_ns"`
	Inode     uint64 `json:"inode"`
	// Tensors are the file's per-tensor sums (a GGUF file), which members
	// serving a stage's tensors to other nodes need; nil until computed.
	Tensors *TensorSums `json:"tensors,omitempty"`
}

// Installation is an artifact directory and what its sidecar says.
type Installation struct {
	Card      Card     `json:"card"`
	Dir       string   `json:"dir"`
	Paths     []string `json:"paths"` // absolute paths of Card.Files, in order
	Installed bool     `json:"installed"`
	Reason    string   `json:"reason,omitempty"` // why not, when not
}

// NotInstalledError says a model has no complete, verified local copy.
type NotInstalledError struct {
	ID     string
	Dir    string
	Reason string
}

func (e *NotInstalledError) Error() string {
	return fmt.Sprintf("catalog: model %s is not installed in %s: %s", e.ID, e.Dir, e.Reason)
}

// fileStat is the identity of a file's content as the file system sees it.
type fileStat struct {
	size    int64
	mtimeNs int64
	inode   uint64
}

func statOf(fi fs.FileInfo) fileStat {
	return fileStat{size: fi.Size(), mtimeNs: fi.ModTime().UnixNano(), inode: inodeOf(fi)}
}

// maxHashCache bounds the hash cache; a node has a few dozen model files.
const maxHashCache = 4096

// hashCache remembers the SHA-256 of files by path and (size, mtime, inode),
// so a catalog read re-hashes a file only after it changed.
type hashCache struct {
	mu sync.Mutex
	m  map[string]hashEntry // guarded by mu
}

type hashEntry struct {
	stat fileStat
	sum  string
}

func (h *hashCache) lookup(path string, st fileStat) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.m[path]
	if !ok || e.stat != st {
		return "", false
	}
	return e.sum, true
}

func (h *hashCache) store(path string, st fileStat, sum string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil || len(h.m) >= maxHashCache {
		h.m = map[string]hashEntry{}
	}
	h.m[path] = hashEntry{stat: st, sum: sum}
}

// sum returns the SHA-256 of path, from the cache while the file is unchanged.
func (h *hashCache) sum(path string) (string, fileStat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fileStat{}, err
	}
	st := statOf(fi)
	if s, ok := h.lookup(path, st); ok {
		return s, st, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fileStat{}, err
	}
	defer f.Close()
	hw := sha256.New()
	if _, err := io.Copy(hw, f); err != nil {
		return "", fileStat{}, err
	}
	fi, err = f.Stat()
	if err != nil {
		return "", fileStat{}, err
	}
	if after := statOf(fi); after != st {
		return "", fileStat{}, fmt.Errorf("%s changed while it was hashed", path)
	}
	s := hex.EncodeToString(hw.Sum(nil))
	h.store(path, st, s)
	return s, st, nil
}

// DecodeSidecar strictly decodes a sidecar and checks that it describes a
// valid card whose every file has one manifest entry.
func DecodeSidecar(b []byte) (Sidecar, error) {
	var sc Sidecar
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&sc); err != nil {
		return Sidecar{}, err
	}
	if d.More() {
		return Sidecar{}, errors.New("trailing data after the sidecar object")
	}
	if sc.Version != SidecarVersion {
		return Sidecar{}, fmt.Errorf("sidecar version %d (this build reads version %d)", sc.Version, SidecarVersion)
	}
	if err := sc.Card.Validate(); err != nil {
		return Sidecar{}, err
	}
	if sc.Card.Builtin {
		return Sidecar{}, errors.New("a sidecar cannot hold the built-in card")
	}
	if len(sc.Card.Files) == 0 || len(sc.Manifest) != len(sc.Card.Files) {
		return Sidecar{}, fmt.Errorf("the manifest has %d entries for %d files", len(sc.Manifest), len(sc.Card.Files))
	}
	for i, e := range sc.Manifest {
		if e.Path != sc.Card.Files[i] {
			return Sidecar{}, fmt.Errorf("manifest[%d] is %q, want the card's file %q", i, e.Path, sc.Card.Files[i])
		}
		if err := checkRepoPath(e.Path); err != nil {
			return Sidecar{}, err
		}
		if e.Size < 0 || len(e.SHA256) != 64 {
			return Sidecar{}, fmt.Errorf("manifest[%d] (%s): bad size or sha256", i, e.Path)
		}
		if e.Tensors != nil {
			if err := e.Tensors.Validate(e.Size); err != nil {
				return Sidecar{}, fmt.Errorf("manifest[%d] (%s): %w", i, e.Path, err)
			}
		}
	}
	return sc, nil
}

// verifyDir reads dir's sidecar and checks every manifest entry against the
// files on disk. It never writes. A file whose size, mtime and inode match
// the manifest is trusted; any other is re-hashed (through the cache).
func verifyDir(dir string, hashes *hashCache) Installation {
	inst := Installation{Dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, SidecarPath))
	if err != nil {
		inst.Reason = fmt.Sprintf("cannot read %s: %v", SidecarPath, err)
		return inst
	}
	if len(b) > maxSidecar {
		inst.Reason = fmt.Sprintf("%s is larger than %d bytes", SidecarPath, maxSidecar)
		return inst
	}
	sc, err := DecodeSidecar(b)
	if err != nil {
		inst.Reason = fmt.Sprintf("%s is invalid: %v", SidecarPath, err)
		return inst
	}
	inst.Card = sc.Card
	for _, e := range sc.Manifest {
		p := filepath.Join(dir, filepath.FromSlash(e.Path))
		inst.Paths = append(inst.Paths, p)
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
			inst.Reason = fmt.Sprintf("file %s is missing (%v); pull the model again", e.Path, err)
			return inst
		case !fi.Mode().IsRegular():
			inst.Reason = fmt.Sprintf("file %s is not a regular file", e.Path)
			return inst
		case fi.Size() != e.Size:
			inst.Reason = fmt.Sprintf("file %s was changed on disk: %d bytes, the manifest says %d; pull the model again", e.Path, fi.Size(), e.Size)
			return inst
		}
		if st := statOf(fi); st.mtimeNs == e.ModTimeNs && st.inode == e.Inode {
			continue
		}
		sum, _, err := hashes.sum(p)
		if err != nil {
			inst.Reason = fmt.Sprintf("cannot hash %s: %v", e.Path, err)
			return inst
		}
		if sum != e.SHA256 {
			inst.Reason = fmt.Sprintf("file %s was changed on disk: sha256 %s, the manifest says %s; pull the model again", e.Path, sum, e.SHA256)
			return inst
		}
	}
	inst.Installed = true
	return inst
}

// maxScanDepth bounds how deep under the models directory sidecars are
// looked for (ArtifactDir uses three levels).
const maxScanDepth = 4

// scanInstalled finds every artifact directory (one holding a sidecar) under
// root, skipping root/.skulk (partial downloads), and verifies each.
func scanInstalled(root string, hashes *hashCache) ([]Installation, error) {
	var out []Installation
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return nil // an unreadable subdirectory holds nothing we can serve
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.Count(rel, string(filepath.Separator)) >= maxScanDepth) {
			return fs.SkipDir
		}
		if _, err := os.Lstat(filepath.Join(p, SidecarPath)); err == nil {
			out = append(out, verifyDir(p, hashes))
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: scan %s: %w", root, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}
