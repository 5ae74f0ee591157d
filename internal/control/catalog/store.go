package catalog

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/vfs"
)

// StoreConfig names a node's model directories.
type StoreConfig struct {
	// ModelsDir holds downloaded artifacts, one directory per card
	// (SKULK_MODELS_DIR, default SKULK_DATA_HOME/models).
	ModelsDir string
	// CustomDir holds the operator's TOML cards (SKULK_CUSTOM_MODEL_CARDS_DIR,
	// default SKULK_DATA_HOME/custom_model_cards).
	CustomDir string
}

// Store is a node's catalog on disk: custom cards, installed artifacts with
// their sidecars, and the built-in card. Reads (Catalog, Inventory, Locate)
// never write. Mutations are serialized. Safe for concurrent use.
type Store struct {
	cfg    StoreConfig // immutable
	hashes *hashCache  // internally locked

	mu sync.Mutex // serializes mutations of the directories
}

// NewStore returns the store over cfg's directories; they need not exist.
func NewStore(cfg StoreConfig) *Store {
	return &Store{cfg: cfg, hashes: &hashCache{}}
}

// Config returns the store's directories.
func (s *Store) Config() StoreConfig { return s.cfg }

// Sources lists the catalog's sources in precedence order: custom cards
// (the operator's final override), installed cards, the built-in card.
func (s *Store) Sources() []Source {
	return []Source{Custom{Dir: s.cfg.CustomDir}, installedSource{s}, Builtin{}}
}

// Catalog builds the effective catalog now. The errors name card files and
// artifacts that were skipped and why.
func (s *Store) Catalog() (*Catalog, []error) {
	return Build(s.Sources()...)
}

// installedSource lists the cards of installed artifacts whose manifests
// verify; an artifact that fails is reported as a *NotInstalledError.
type installedSource struct{ s *Store }

func (src installedSource) Cards() ([]Card, error) {
	insts, err := src.s.Inventory()
	if err != nil {
		return nil, err
	}
	var cards []Card
	var errs []error
	seen := map[string]string{}
	for _, in := range insts {
		switch {
		case !in.Installed:
			errs = append(errs, &NotInstalledError{ID: in.Card.ID, Dir: in.Dir, Reason: in.Reason})
		case seen[in.Card.ID] != "":
			errs = append(errs, fmt.Errorf("catalog: model %s is installed twice (%s and %s); the first is used, remove the other", in.Card.ID, seen[in.Card.ID], in.Dir))
		default:
			seen[in.Card.ID] = in.Dir
			cards = append(cards, in.Card)
		}
	}
	return cards, errors.Join(errs...)
}

// Inventory verifies every artifact directory under ModelsDir, installed or
// not (Installation.Reason says why not).
func (s *Store) Inventory() ([]Installation, error) {
	return scanInstalled(s.cfg.ModelsDir, s.hashes)
}

// safeName turns a model id into one path element.
func safeName(id string) string {
	return strings.TrimSuffix(cardFileName(id), ".toml")
}

// ArtifactDir is where a card's files live once installed: one directory per
// source repository, revision and model id (models/OWNER--NAME/REVISION/ID),
// so bytes of one pin never stand in for another. A card without a source
// repository (an import) lives under models/local/ID.
func (s *Store) ArtifactDir(c Card) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	if c.Builtin {
		return filepath.Join(s.cfg.ModelsDir, BuiltinID), nil
	}
	if c.Repo == "" {
		return filepath.Join(s.cfg.ModelsDir, "local", safeName(c.ID)), nil
	}
	return filepath.Join(s.cfg.ModelsDir, strings.ReplaceAll(c.Repo, "/", "--"), c.Revision, safeName(c.ID)), nil
}

// PartialDir is where a card's download collects before it is published:
// stable for a card's artifact, so a new process resumes the partial files.
func (s *Store) PartialDir(c Card) (string, error) {
	dir, err := s.ArtifactDir(c)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(s.cfg.ModelsDir, dir)
	if err != nil {
		return "", err
	}
	key := sha256.Sum256([]byte(filepath.ToSlash(rel) + "\x00" + strings.Join(c.Files, "\x00")))
	return filepath.Join(s.cfg.ModelsDir, ".skulk", "partial", hex.EncodeToString(key[:12])), nil
}

// Locate returns the verified installation of exactly this card's artifact:
// the same repository, revision and files. It fails with *NotInstalledError.
func (s *Store) Locate(c Card) (Installation, error) {
	dir, err := s.ArtifactDir(c)
	if err != nil {
		return Installation{}, err
	}
	if _, err := os.Lstat(filepath.Join(dir, SidecarPath)); err != nil {
		return Installation{}, &NotInstalledError{ID: c.ID, Dir: dir, Reason: "no complete download (no " + SidecarPath + ")"}
	}
	in := verifyDir(dir, s.hashes)
	if !in.Installed {
		return Installation{}, &NotInstalledError{ID: c.ID, Dir: dir, Reason: in.Reason}
	}
	if in.Card.Repo != c.Repo || in.Card.Revision != c.Revision || strings.Join(in.Card.Files, "\n") != strings.Join(c.Files, "\n") {
		return Installation{}, &NotInstalledError{ID: c.ID, Dir: dir, Reason: "the installed artifact is a different source, revision or file set"}
	}
	in.Card = c
	return in, nil
}

// AddCustom validates c and writes it as a custom card (atomically),
// replacing the custom card of the same id. It returns the file's path.
func (s *Store) AddCustom(c Card) (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	b, err := EncodeCardTOML(c)
	if err != nil {
		return "", err
	}
	if _, err := DecodeCardTOML("(new card)", b); err != nil { // what we write must read back
		return "", fmt.Errorf("catalog: card %s does not round-trip: %w", c.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(s.cfg.CustomDir, cardFileName(c.ID))
	if old, err := s.customFileLocked(c.ID); err != nil {
		return "", err
	} else if old != "" && old != path {
		return "", fmt.Errorf("catalog: model %s is already defined by %s; remove it first", c.ID, old)
	}
	if err := writeFileAtomic(path, b, 0o644); err != nil {
		return "", fmt.Errorf("catalog: write custom card %s: %w", c.ID, vfs.NoSpace(err, path, "the card of model "+c.ID))
	}
	return path, nil
}

// RemoveCustom deletes the custom card of id, if there is one. The catalog
// then falls back to the installed card or drops the model.
func (s *Store) RemoveCustom(id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path, err := s.customFileLocked(id)
	if err != nil || path == "" {
		return false, err
	}
	if err := os.Remove(path); err != nil {
		return false, fmt.Errorf("catalog: remove custom card %s: %w", id, err)
	}
	return true, syncDir(s.cfg.CustomDir)
}

// customFileLocked finds the custom card file that defines id ("" if none).
// A file that fails to decode is skipped.
func (s *Store) customFileLocked(id string) (string, error) {
	files, err := Custom{Dir: s.cfg.CustomDir}.files()
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if c, err := readCardFile(f); err == nil && c.ID == id {
			return f, nil
		}
	}
	return "", nil
}

// RemoveArtifacts deletes every installed artifact directory of model id
// (verified or not) and returns how many it removed.
func (s *Store) RemoveArtifacts(id string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	insts, err := s.Inventory()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, in := range insts {
		if in.Card.ID != id {
			continue
		}
		if err := s.discardLocked(in.Dir); err != nil {
			return n, fmt.Errorf("catalog: remove %s: %w", in.Dir, err)
		}
		n++
	}
	return n, nil
}

// discardLocked removes dir: first its sidecar (so a crash midway leaves
// an incomplete directory, never one that claims to be installed), then the
// rest.
func (s *Store) discardLocked(dir string) error {
	if err := os.Remove(filepath.Join(dir, SidecarPath)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.RemoveAll(dir)
}

// Publish installs a staged download: staged holds exactly the card's files
// (its other contents are discarded), already verified by the caller, whose
// SHA-256 sums are given by file. Publish checks the set of files, writes the
// sidecar with the manifest, syncs every file and directory, and renames
// staged into ArtifactDir(c), replacing an older copy only after all that
// succeeded.
func (s *Store) Publish(c Card, staged string, sums map[string]string) (Installation, error) {
	dir, err := s.ArtifactDir(c)
	if err != nil {
		return Installation{}, err
	}
	if c.Builtin || len(c.Files) == 0 {
		return Installation{}, fmt.Errorf("catalog: model %s has no files to publish", c.ID)
	}
	sc := Sidecar{Version: SidecarVersion, Card: c}
	for i, name := range c.Files {
		p := filepath.Join(staged, filepath.FromSlash(name))
		f, err := os.Open(p)
		if err != nil {
			return Installation{}, fmt.Errorf("catalog: publish %s: %w", c.ID, err)
		}
		err = f.Sync()
		fi, serr := f.Stat()
		f.Close()
		if err != nil || serr != nil {
			return Installation{}, fmt.Errorf("catalog: publish %s: sync %s: %w", c.ID, name, errors.Join(err, serr))
		}
		sum := sums[name]
		if len(sum) != 64 {
			return Installation{}, fmt.Errorf("catalog: publish %s: no verified sha256 for %s", c.ID, name)
		}
		st := statOf(fi)
		me := ManifestEntry{Path: name, Size: st.size, SHA256: sum, ModTimeNs: st.mtimeNs, Inode: st.inode}
		if i == 0 && isGGUF(name) {
			// Recorded once here, so members can serve a stage's tensors;
			// a file that does not parse gets them lazily (or never).
			if ts, err := ComputeTensorSums(context.Background(), p); err == nil && ts.Validate(st.size) == nil {
				me.Tensors = ts
			}
		}
		sc.Manifest = append(sc.Manifest, me)
		if err := syncDir(filepath.Dir(p)); err != nil {
			return Installation{}, err
		}
	}
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return Installation{}, err
	}
	if _, err := DecodeSidecar(b); err != nil {
		return Installation{}, fmt.Errorf("catalog: publish %s: %w", c.ID, err)
	}
	if err := writeFileAtomic(filepath.Join(staged, SidecarPath), b, 0o644); err != nil {
		return Installation{}, fmt.Errorf("catalog: publish %s: write sidecar: %w", c.ID, vfs.NoSpace(err, staged, "the sidecar of model "+c.ID))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return Installation{}, vfs.NoSpace(err, dir, "publishing model "+c.ID)
	}
	var old string
	if _, err := os.Lstat(dir); err == nil {
		old = filepath.Join(s.cfg.ModelsDir, ".skulk", "trash", randomName())
		if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
			return Installation{}, err
		}
		if err := os.Rename(dir, old); err != nil {
			return Installation{}, fmt.Errorf("catalog: publish %s: move the old copy aside: %w", c.ID, err)
		}
	}
	if err := os.Rename(staged, dir); err != nil {
		return Installation{}, fmt.Errorf("catalog: publish %s: %w", c.ID, err)
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return Installation{}, err
	}
	if old != "" {
		os.RemoveAll(old) // the new copy is in place; a leftover is only disk space
	}
	in := verifyDir(dir, s.hashes)
	if !in.Installed {
		return Installation{}, &NotInstalledError{ID: c.ID, Dir: dir, Reason: in.Reason}
	}
	return in, nil
}

func randomName() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ImportCard is the card Import publishes for the GGUF file src as model
// id, read from its header without copying it.
func ImportCard(id, src string) (Card, error) {
	f, err := gguf.Open(src)
	if err != nil {
		return Card{}, fmt.Errorf("catalog: import %s: %w", src, err)
	}
	c, err := CardFromGGUF(id, f)
	f.Close()
	if err != nil {
		return Card{}, fmt.Errorf("catalog: import %s: %w", src, err)
	}
	c.Files = []string{filepath.Base(src)}
	if fi, err := os.Stat(src); err == nil {
		c.StorageBytes = fi.Size() // the bytes the copy holds, trailing padding included
	}
	if err := c.Validate(); err != nil {
		return Card{}, err
	}
	return c, nil
}

// Import installs a local GGUF file as model id: it reads the header for the
// card, copies the file (hashing it) into a staging directory and publishes
// it with a sidecar. The card has no source repository. The returned card is
// installed, not a custom card: AddCustom it to override fields.
func (s *Store) Import(ctx context.Context, id, src string) (Card, error) {
	c, err := ImportCard(id, src)
	if err != nil {
		return Card{}, err
	}
	name := c.Files[0]
	staged := filepath.Join(s.cfg.ModelsDir, ".skulk", "import", randomName())
	defer os.RemoveAll(staged)
	what := "importing model " + id
	if fi, err := os.Stat(src); err == nil {
		what = fmt.Sprintf("importing model %s (%d bytes)", id, fi.Size())
	}
	if err := os.MkdirAll(staged, 0o755); err != nil {
		return Card{}, vfs.NoSpace(err, s.cfg.ModelsDir, what)
	}
	sum, err := copyHashing(ctx, src, filepath.Join(staged, name))
	if err != nil {
		return Card{}, fmt.Errorf("catalog: import %s: %w", src, vfs.NoSpace(err, s.cfg.ModelsDir, what))
	}
	if _, err := s.Publish(c, staged, map[string]string{name: sum}); err != nil {
		return Card{}, err
	}
	return c, nil
}

// copyHashing copies src to dst, returning the SHA-256 of what it wrote.
func copyHashing(ctx context.Context, src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", err
	}
	defer out.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			if _, err := out.Write(buf[:n]); err != nil {
				return "", err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", rerr
		}
	}
	return hex.EncodeToString(h.Sum(nil)), out.Close()
}
