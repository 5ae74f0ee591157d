package tensorfetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/platform/ids"
)

// Fetcher fetches stages' tensors from members into partial copies under
// Dir. Safe for concurrent use: fetches run one at a time, so a partial
// copy has one writer.
type Fetcher struct {
	// Dir holds the partial copies, one directory per model file.
	Dir string
	// Dial opens a stream to a member on the tensors ALPN.
	Dial   func(ctx context.Context, node ids.NodeID) (io.ReadWriteCloser, error)
	Logger *slog.Logger

	mu sync.Mutex // serializes fetches
}

// Result is a usable partial copy.
type Result struct {
	Path    string       // the sparse file to load
	Card    catalog.Card // the installing member's card
	Source  ids.NodeID   // the member the missing parts came from ("" when none were missing)
	Fetched int64        // bytes of tensors and header received for this call
	Reused  int64        // bytes of the share already in the partial copy
}

// Progress hears the bytes fetched so far of the total this call fetches.
type Progress func(done, total int64)

// Fetch makes the parts of model that a stage with range r needs present
// and verified in a partial copy, taking what is missing from the first of
// sources that has the model. A part that fails verification ends the call
// with a *VerifyError (the copy is not used); when no member has the model
// or all fail otherwise the error is a *NoSourceError. want, when not nil,
// is the card this node knows: a member's copy must be the same artifact
// (source repository, revision and files).
func (f *Fetcher) Fetch(ctx context.Context, model string, sources []ids.NodeID, r Range, want *catalog.Card, progress Progress) (Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	nse := &NoSourceError{Model: model}
	for _, src := range sources {
		m, err := f.manifest(ctx, src, model)
		if err == nil && want != nil && !sameArtifact(m.Card, *want) {
			err = fmt.Errorf("its copy is another artifact (%s@%s) than this node's card names", m.Card.Repo, m.Card.Revision)
		}
		if err == nil {
			var res Result
			res, err = f.fetchFrom(ctx, src, model, m, r, progress)
			if err == nil {
				return res, nil
			}
			if ve := (*VerifyError)(nil); errors.As(err, &ve) || ctx.Err() != nil {
				return Result{}, err
			}
		}
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		nse.Reasons = append(nse.Reasons, fmt.Sprintf("node %s: %v", src, err))
	}
	// No member answered: a partial copy that already holds every part of
	// the range still serves (a stage restarting while its source is away).
	if res, ok := f.local(model, r, want); ok {
		return res, nil
	}
	return Result{}, nse
}

// local finds a partial copy of model that holds every part range r needs.
func (f *Fetcher) local(model string, r Range, want *catalog.Card) (Result, bool) {
	entries, _ := os.ReadDir(f.Dir)
	prefix := copyPrefix(model) + "-"
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || len(e.Name()) != len(prefix)+16 {
			continue
		}
		dir := filepath.Join(f.Dir, e.Name())
		rec, err := loadRecord(dir)
		if err != nil || rec.Card.ID != model || rec.Sums == nil || rec.Sums.Validate(rec.Size) != nil || len(rec.Card.Files) == 0 ||
			(want != nil && !sameArtifact(rec.Card, *want)) {
			continue
		}
		path := filepath.Join(dir, fileName(rec.Card.Files[0]))
		if fi, err := os.Stat(path); err != nil || fi.Size() != rec.Size {
			continue
		}
		have := map[string]bool{}
		for _, n := range rec.Have {
			have[n] = true
		}
		res := Result{Path: path, Card: rec.Card}
		complete := true
		for _, p := range plan(&manifest{Sums: rec.Sums}, r) {
			complete = complete && have[p.name]
			res.Reused += p.size
		}
		if complete {
			return res, true
		}
	}
	return Result{}, false
}

// manifest asks src for its copy of model.
func (f *Fetcher) manifest(ctx context.Context, src ids.NodeID, model string) (*manifest, error) {
	s, err := f.Dial(ctx, src)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	if err := writeFrame(s, request{Op: opManifest, Model: model}); err != nil {
		return nil, err
	}
	var rep reply
	if err := readFrame(s, maxReply, &rep); err != nil {
		return nil, err
	}
	switch {
	case rep.Error != nil:
		return nil, rep.Error
	case rep.Manifest == nil || rep.Manifest.Sums == nil:
		return nil, errors.New("tensorfetch: the member sent no manifest")
	}
	m := rep.Manifest
	if err := m.Card.Validate(); err != nil {
		return nil, fmt.Errorf("tensorfetch: the member's card: %w", err)
	}
	if m.Card.ID != model || len(m.Card.Files) == 0 || m.File != m.Card.Files[0] || len(m.SHA256) != 64 {
		return nil, fmt.Errorf("tensorfetch: the member's manifest does not describe model %s", model)
	}
	if err := m.Sums.Validate(m.Size); err != nil {
		return nil, err
	}
	return m, nil
}

// part is a byte range of the file with its recorded sum.
type part struct {
	name      string // tensor name, or "header"
	off, size int64
	sha256    string
}

// plan lists the parts a stage needs: the header, then its tensors.
func plan(m *manifest, r Range) []part {
	parts := []part{{name: headerPart, off: 0, size: m.Sums.HeaderBytes, sha256: m.Sums.HeaderSHA256}}
	byName := make(map[string]catalog.TensorSum, len(m.Sums.Tensors))
	names := make([]string, 0, len(m.Sums.Tensors))
	for _, t := range m.Sums.Tensors {
		byName[t.Name] = t
		names = append(names, t.Name)
	}
	for _, n := range Needed(names, r) {
		t := byName[n]
		parts = append(parts, part{name: n, off: t.Offset, size: t.Size, sha256: t.SHA256})
	}
	return parts
}

const headerPart = "header"

// fetchFrom completes the partial copy of m's file for range r from src.
func (f *Fetcher) fetchFrom(ctx context.Context, src ids.NodeID, model string, m *manifest, r Range, progress Progress) (Result, error) {
	dir := filepath.Join(f.Dir, copyName(model, m.SHA256))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, err
	}
	rec, err := loadRecord(dir)
	if err != nil || rec.SHA256 != m.SHA256 || rec.Size != m.Size {
		rec = &record{Version: recordVersion, SHA256: m.SHA256, Size: m.Size}
	}
	rec.Card, rec.Sums = m.Card, m.Sums
	path := filepath.Join(dir, fileName(m.File))
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return Result{}, err
	}
	defer file.Close()
	if fi, err := file.Stat(); err != nil {
		return Result{}, err
	} else if fi.Size() != m.Size {
		// A new (or foreign) file: nothing in it is verified. It gets the
		// original's size, holes where no part is, so the runner maps it
		// as the original.
		rec.Have = nil
		if err := file.Truncate(m.Size); err != nil {
			return Result{}, fmt.Errorf("tensorfetch: size %s: %w", path, err)
		}
	}
	have := map[string]bool{}
	for _, n := range rec.Have {
		have[n] = true
	}
	var todo []part
	var total, reused int64
	for _, p := range plan(m, r) {
		if have[p.name] {
			reused += p.size
			continue
		}
		todo = append(todo, p)
		total += p.size
	}
	res := Result{Path: path, Card: m.Card, Reused: reused}
	if len(todo) == 0 {
		return res, saveRecord(dir, rec)
	}
	res.Source = src
	if progress != nil {
		progress(0, total)
	}
	// What was verified is recorded even when a later part fails, after
	// the file's bytes are synced.
	defer func() {
		if file.Sync() == nil {
			saveRecord(dir, rec)
		}
	}()
	for _, p := range todo {
		n, err := f.fetchPart(ctx, src, model, file, p, func(n int64) {
			if progress != nil {
				progress(res.Fetched+n, total)
			}
		})
		res.Fetched += n
		if err != nil {
			return Result{}, err
		}
		rec.Have = append(rec.Have, p.name)
		if f.Logger != nil {
			f.Logger.Debug("fetched a part", "model", model, "part", p.name, "bytes", p.size, "from", src)
		}
	}
	if err := file.Sync(); err != nil {
		return Result{}, err
	}
	return res, nil
}

// fetchPart reads p from src in reads of at most MaxRead bytes, writes them
// at their offset and checks the part's sum. It returns the bytes received.
func (f *Fetcher) fetchPart(ctx context.Context, src ids.NodeID, model string, file *os.File, p part, progress func(int64)) (int64, error) {
	h := sha256.New()
	var got int64
	for got < p.size {
		n := min(p.size-got, MaxRead)
		if err := f.read(ctx, src, model, p.off+got, n, io.MultiWriter(h, io.NewOffsetWriter(file, p.off+got))); err != nil {
			return got, fmt.Errorf("tensorfetch: %s of %s from node %s: %w", p.name, model, src, err)
		}
		got += n
		progress(got)
	}
	if err := Verify(model, p.name, src, h.Sum(nil), p.sha256); err != nil {
		return got, err
	}
	return got, nil
}

// read copies bytes [off, off+n) of model's file on src to w.
func (f *Fetcher) read(ctx context.Context, src ids.NodeID, model string, off, n int64, w io.Writer) error {
	s, err := f.Dial(ctx, src)
	if err != nil {
		return err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	if err := writeFrame(s, request{Op: opRead, Model: model, Offset: off, Length: n}); err != nil {
		return err
	}
	var rep reply
	if err := readFrame(s, maxReply, &rep); err != nil {
		return err
	}
	if rep.Error != nil {
		return rep.Error
	}
	if rep.Length != n {
		return fmt.Errorf("the member answers %d bytes for a read of %d", rep.Length, n)
	}
	if _, err := io.CopyN(w, s, n); err != nil {
		return err
	}
	return ctx.Err()
}

// Verify checks a part's computed sum against the recorded one.
func Verify(model, name string, src ids.NodeID, sum []byte, want string) error {
	if got := hex.EncodeToString(sum); got != want {
		return &VerifyError{Model: model, Part: name, Source: src, Want: want, Got: got}
	}
	return nil
}

// copyName is the directory of a model file's partial copy: the model id
// made one path element, and the start of the file's sum, so a different
// file under the same id never mixes with it.
func copyName(model, sum string) string { return copyPrefix(model) + "-" + sum[:16] }

// copyPrefix is the model id made one path element.
func copyPrefix(model string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < 32 {
			return '_'
		}
		return r
	}, model)
	if len(safe) > 96 {
		safe = safe[:96]
	}
	return strings.TrimLeft(safe, ".")
}

// fileName is the local name of the card's file: its last element.
func fileName(name string) string {
	b := filepath.Base(filepath.FromSlash(name))
	if b == "." || b == ".." || b == string(filepath.Separator) || b == recordFile {
		return "model.gguf"
	}
	return b
}

// sameArtifact says two cards name the same files of the same source.
func sameArtifact(a, b catalog.Card) bool {
	return a.Repo == b.Repo && a.Revision == b.Revision && strings.Join(a.Files, "\n") == strings.Join(b.Files, "\n")
}
