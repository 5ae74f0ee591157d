package tensorfetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/platform/ids"
)

var testShape = synth.Shape{Name: "llama", Arch: "llama", NEmbd: 64, NLayer: 4, NHead: 4, NHeadKV: 2,
	NFF: 128, NVocab: 512, RopeBase: 1e4, CtxLen: 128}

// member is a node with a model installed in a real store, serving its
// tensors over in-memory streams.
type member struct {
	store *catalog.Store
	card  catalog.Card
	wg    sync.WaitGroup
}

func newMember(t *testing.T, id string) *member {
	t.Helper()
	src := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.WriteFile(src, testShape, tensor.Q8_0, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st := catalog.NewStore(catalog.StoreConfig{ModelsDir: filepath.Join(dir, "models"), CustomDir: filepath.Join(dir, "cards")})
	card, err := st.Import(t.Context(), id, src)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{store: st, card: card}
	t.Cleanup(m.wg.Wait)
	return m
}

func (m *member) lookup(ctx context.Context, model string) (Served, error) {
	if model != m.card.ID {
		return Served{}, ErrNotInstalled
	}
	in, e, err := m.store.TensorSums(ctx, m.card)
	if err != nil {
		return Served{}, err
	}
	return Served{Card: in.Card, Path: in.Paths[0], Size: e.Size, SHA256: e.SHA256, Sums: e.Tensors}, nil
}

func (m *member) dial(ctx context.Context, _ ids.NodeID) (io.ReadWriteCloser, error) {
	c, s := net.Pipe()
	m.wg.Go(func() {
		defer s.Close()
		Serve(ctx, s, m.lookup)
	})
	return c, nil
}

func (m *member) path(t *testing.T) string {
	t.Helper()
	in, err := m.store.Locate(m.card)
	if err != nil {
		t.Fatal(err)
	}
	return in.Paths[0]
}

// shareOf is the header and the tensors Needed by r, from the file.
func shareOf(t *testing.T, path string, r Range) (int64, *gguf.File) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var names []string
	for _, ti := range f.Tensors {
		names = append(names, ti.Name)
	}
	n := f.DataOffset
	for _, name := range Needed(names, r) {
		ti, _ := f.Tensor(name)
		n += ti.Size
	}
	return n, f
}

func TestFetchWritesOnlyTheStagesTensors(t *testing.T) {
	m := newMember(t, "llama")
	fx := &Fetcher{Dir: t.TempDir(), Dial: m.dial}
	r := Range{Start: 2, End: 4, Last: true}
	var lastDone, lastTotal int64
	res, err := fx.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, r, nil, func(done, total int64) { lastDone, lastTotal = done, total })
	if err != nil {
		t.Fatal(err)
	}
	share, orig := shareOf(t, m.path(t), r)
	if res.Fetched != share || lastDone != share || lastTotal != share || res.Source != "a" {
		t.Fatalf("fetched %d (progress %d/%d) from %q, want the share %d", res.Fetched, lastDone, lastTotal, res.Source, share)
	}
	// The partial copy is the original's size; its stage's tensors are the
	// original's bytes, every other tensor is still a hole (zeros).
	f, err := gguf.Open(res.Path)
	if err != nil {
		t.Fatalf("the partial copy does not open as GGUF: %v", err)
	}
	defer f.Close()
	needed := map[string]bool{}
	for _, n := range Needed(tensorNames(orig), r) {
		needed[n] = true
	}
	for _, ti := range orig.Tensors {
		want, _ := orig.TensorData(ti.Name)
		got, err := f.TensorData(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case needed[ti.Name] && string(got) != string(want):
			t.Fatalf("tensor %s differs from the original", ti.Name)
		case !needed[ti.Name] && ti.Size > 0 && string(got) == string(want):
			t.Fatalf("tensor %s was fetched but the stage does not need it", ti.Name)
		}
	}

	// The same range again: nothing moves. Another range: only what is missing.
	res, err = fx.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, r, nil, nil)
	if err != nil || res.Fetched != 0 || res.Reused != share {
		t.Fatalf("the same range again: %+v %v", res, err)
	}
	// With no member answering, the copy still serves a range it holds,
	// and only such a range.
	gone := &Fetcher{Dir: fx.Dir, Dial: func(context.Context, ids.NodeID) (io.ReadWriteCloser, error) {
		return nil, errors.New("unreachable")
	}}
	if res, err := gone.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, Range{Start: 3, End: 4, Last: true}, nil, nil); err != nil || res.Fetched != 0 || res.Path == "" {
		t.Fatalf("a held range with the source away: %+v %v", res, err)
	}
	if _, err := gone.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, Range{Start: 1, End: 4, Last: true}, nil, nil); !errors.As(err, new(*NoSourceError)) {
		t.Fatalf("a range the copy lacks with the source away: %v", err)
	}
	all := Range{Start: 0, End: 4, First: true, Last: true}
	whole, _ := shareOf(t, m.path(t), all)
	res, err = fx.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, all, nil, nil)
	if err != nil || res.Fetched != whole-share || res.Reused != share {
		t.Fatalf("the whole model after a stage: %+v %v (want %d fetched)", res, err, whole-share)
	}
	got, _ := os.ReadFile(res.Path)
	want, _ := os.ReadFile(m.path(t))
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatal("the completed partial copy is not the original file")
	}
}

func tensorNames(f *gguf.File) []string {
	var names []string
	for _, ti := range f.Tensors {
		names = append(names, ti.Name)
	}
	return names
}

// A byte flipped in the serving member's file after its sums were recorded
// is refused: the fetch fails with *VerifyError and the tensor is not
// recorded as present, so the copy is not used and a retry fetches it again.
func TestFetchRefusesAFlippedByte(t *testing.T) {
	m := newMember(t, "llama")
	if _, _, err := m.store.TensorSums(t.Context(), m.card); err != nil {
		t.Fatal(err)
	}
	path := m.path(t)
	orig, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := orig.Tensor("blk.3.ffn_up.weight")
	at := orig.DataOffset + int64(ti.Offset) + ti.Size/2
	orig.Close()
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	b[at] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// Keep the manifest's identity (size, mtime, inode) so the store still
	// trusts the file: only the per-tensor sums can catch the flip.
	os.Chtimes(path, fi.ModTime(), fi.ModTime())

	fx := &Fetcher{Dir: t.TempDir(), Dial: m.dial}
	_, err = fx.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, Range{Start: 2, End: 4, Last: true}, nil, nil)
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Part != "blk.3.ffn_up.weight" || ve.Source != "a" {
		t.Fatalf("fetch of a flipped tensor: %v", err)
	}
	rec, err := loadRecord(filepath.Join(fx.Dir, copyName("llama", m.fileSHA(t))))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rec.Have {
		if n == ve.Part {
			t.Fatalf("the refused tensor is recorded as present: %v", rec.Have)
		}
	}
	// A range that does not touch the flipped tensor is fine.
	if _, err := fx.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, Range{Start: 0, End: 2, First: true}, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func (m *member) fileSHA(t *testing.T) string {
	t.Helper()
	_, e, err := m.store.TensorSums(t.Context(), m.card)
	if err != nil {
		t.Fatal(err)
	}
	return e.SHA256
}

func TestVerify(t *testing.T) {
	b := []byte("tensor bytes")
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])
	if err := Verify("m", "t", "a", sum[:], want); err != nil {
		t.Fatal(err)
	}
	b[3] ^= 1
	bad := sha256.Sum256(b)
	if err := Verify("m", "t", "a", bad[:], want); !errors.As(err, new(*VerifyError)) {
		t.Fatalf("a flipped byte: %v", err)
	}
}

// A member without the model, or none at all, is a *NoSourceError; the
// next member that has it serves.
func TestFetchSources(t *testing.T) {
	m := newMember(t, "llama")
	fx := &Fetcher{Dir: t.TempDir(), Dial: m.dial}
	r := Range{Start: 0, End: 1, First: true}
	if _, err := fx.Fetch(t.Context(), "other", []ids.NodeID{"a"}, r, nil, nil); !errors.As(err, new(*NoSourceError)) {
		t.Fatalf("a model no member has: %v", err)
	}
	if _, err := fx.Fetch(t.Context(), "llama", nil, r, nil, nil); !errors.As(err, new(*NoSourceError)) {
		t.Fatalf("no members: %v", err)
	}
	down := &Fetcher{Dir: fx.Dir, Dial: func(ctx context.Context, n ids.NodeID) (io.ReadWriteCloser, error) {
		if n == "down" {
			return nil, errors.New("unreachable")
		}
		return m.dial(ctx, n)
	}}
	res, err := down.Fetch(t.Context(), "llama", []ids.NodeID{"down", "a"}, r, nil, nil)
	if err != nil || res.Source != "a" {
		t.Fatalf("after an unreachable member: %+v %v", res, err)
	}
	other := m.card
	other.Repo, other.Revision = "someone/else", "main"
	if _, err := fx.Fetch(t.Context(), "llama", []ids.NodeID{"a"}, Range{Start: 1, End: 2}, &other, nil); !errors.As(err, new(*NoSourceError)) {
		t.Fatalf("a member's copy of another artifact: %v", err)
	}
}

// A member serves the header and whole-or-part of one tensor, at most
// MaxRead bytes at once; anything else is a typed bad_request.
func TestServeBounds(t *testing.T) {
	m := newMember(t, "llama")
	sv, err := m.lookup(t.Context(), "llama")
	if err != nil {
		t.Fatal(err)
	}
	t0 := sv.Sums.Tensors[0]
	for _, tc := range []struct {
		name      string
		req       request
		wantError string
	}{
		{"the header", request{Op: opRead, Model: "llama", Offset: 0, Length: sv.Sums.HeaderBytes}, ""},
		{"a tensor", request{Op: opRead, Model: "llama", Offset: t0.Offset, Length: t0.Size}, ""},
		{"across header and tensor", request{Op: opRead, Model: "llama", Offset: sv.Sums.HeaderBytes - 1, Length: 2}, CodeBadRequest},
		{"past a tensor", request{Op: opRead, Model: "llama", Offset: t0.Offset, Length: t0.Size + 1}, CodeBadRequest},
		{"too long", request{Op: opRead, Model: "llama", Offset: 0, Length: MaxRead + 1}, CodeBadRequest},
		{"negative", request{Op: opRead, Model: "llama", Offset: -1, Length: 1}, CodeBadRequest},
		{"unknown op", request{Op: "write", Model: "llama"}, CodeBadRequest},
		{"not installed", request{Op: opManifest, Model: "nope"}, CodeNotInstalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := m.dial(t.Context(), "a")
			defer s.Close()
			if err := writeFrame(s, tc.req); err != nil {
				t.Fatal(err)
			}
			var rep reply
			if err := readFrame(s, maxReply, &rep); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.wantError == "" && rep.Error != nil:
				t.Fatalf("refused: %v", rep.Error)
			case tc.wantError != "" && (rep.Error == nil || rep.Error.Code != tc.wantError):
				t.Fatalf("reply %+v, want error %s", rep, tc.wantError)
			case tc.wantError == "":
				if n, err := io.Copy(io.Discard, s); err != nil || n != tc.req.Length {
					t.Fatalf("%d bytes after the reply, want %d (%v)", n, tc.req.Length, err)
				}
			}
		})
	}
}
