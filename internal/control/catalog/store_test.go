package catalog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/testkit"
)

const storiesPath = "../../../testdata/models/stories260K.gguf"

func newTestStore(t *testing.T) *Store {
	t.Helper()
	root := t.TempDir()
	return NewStore(StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "custom_model_cards")})
}

func TestCardTOMLRoundTrip(t *testing.T) {
	c, err := BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	c.Builtin = false
	c.Repo, c.Revision, c.Files = "ggml-org/models", strings.Repeat("ab", 20), []string{"tinyllamas/stories260K.gguf"}
	c.Capabilities = []Capability{CapTools}
	c.Runtime = Runtime{ServedContext: 256, KVCacheType: "f16", MaxPipelineSplitLayer: 3, Speculative: SpeculativeLookup, DraftModel: "other", DraftMax: 4}
	b, err := EncodeCardTOML(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCardTOML("x.toml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got.Digest() != c.Digest() {
		t.Fatalf("round trip changed the card:\n%s", b)
	}
}

func TestCardTOMLStrict(t *testing.T) {
	base := `model_id = "m"
architecture = "llama"
layers = 2
hidden_size = 64
kv_heads = 4
head_dim = 8
context_length = 512
storage_bytes = 1000
tasks = ["text-generation"]
`
	tests := []struct {
		name, extra, want string
	}{
		{"unknown top-level field", "contxt_length = 5\n", `field "contxt_length"`},
		{"unknown runtime knob", "[runtime]\nthreads = 4\n", `field "runtime.threads"`},
		{"builtin is not settable", "builtin = true\n", `field "builtin"`},
		{"branch instead of commit", "source_repository = \"a/b\"\nsource_revision = \"main\"\nfiles = [\"m.gguf\"]\n", "full 40-character commit"},
		{"escaping file path", "source_repository = \"a/b\"\nsource_revision = \"" + strings.Repeat("0", 40) + "\"\nfiles = [\"../m.gguf\"]\n", "clean repository-relative path"},
		{"incomplete split", "source_repository = \"a/b\"\nsource_revision = \"" + strings.Repeat("0", 40) + "\"\nfiles = [\"m-00001-of-00003.gguf\", \"m-00002-of-00003.gguf\"]\n", "3-part split"},
		{"unknown capability", "capabilities = [\"telepathy\"]\n", "unknown capability"},
		{"served context beyond the model", "[runtime]\nserved_context = 4096\n", "served_context"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			_, err := DecodeCardTOML("/cards/m.toml", []byte(base+tt.extra))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "/cards/m.toml") {
				t.Fatalf("error %v, want one naming %q and the file", err, tt.want)
			}
		})
	}
	c, err := DecodeCardTOML("m.toml", []byte(base+"source_repository = \"a/b\"\nsource_revision = \""+strings.Repeat("0", 40)+"\"\nfiles = [\"m-00001-of-00002.gguf\", \"m-00002-of-00002.gguf\"]\n"))
	if err != nil {
		t.Fatalf("a complete split card: %v", err)
	}
	if len(c.LayerBytes) != 2 || c.LayerBytes[0] != 500 {
		t.Fatalf("layer_bytes defaulted to %v, want storage split evenly", c.LayerBytes)
	}
}

// tree records every path under root with its size and mtime.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, _ := d.Info()
		m[p] = fi.ModTime().String() + "/" + fi.Mode().String()
		if !d.IsDir() {
			m[p] += "/" + strconv.FormatInt(fi.Size(), 10)
		}
		return nil
	})
	return m
}

func TestCustomPrecedenceAndFallback(t *testing.T) {
	s := newTestStore(t)
	card, err := s.Import(t.Context(), "stories-local", storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.Locate(card)
	if err != nil || len(in.Paths) != 1 {
		t.Fatalf("locate after import: %+v %v", in, err)
	}
	cat, errs := s.Catalog()
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if got, ok := cat.Get("stories-local"); !ok || got.Digest() != card.Digest() {
		t.Fatalf("installed card not in the catalog: %+v", got)
	}

	override := card
	override.Name = "operator's name"
	override.ChatTemplate = "{{ messages }}"
	if _, err := s.AddCustom(override); err != nil {
		t.Fatal(err)
	}
	before := tree(t, filepath.Dir(s.cfg.ModelsDir))
	cat, errs = s.Catalog()
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	if got, _ := cat.Get("stories-local"); got.Name != "operator's name" {
		t.Fatalf("custom card does not override the installed one: %q", got.Name)
	}
	if _, err := s.Locate(override); err != nil {
		t.Fatalf("the custom card names the same artifact, which is installed: %v", err)
	}
	if after := tree(t, filepath.Dir(s.cfg.ModelsDir)); len(after) != len(before) {
		t.Fatal("reading the catalog wrote to disk")
	} else {
		for p, v := range before {
			if after[p] != v {
				t.Fatalf("reading the catalog changed %s", p)
			}
		}
	}

	if ok, err := s.RemoveCustom("stories-local"); !ok || err != nil {
		t.Fatalf("remove custom: %v %v", ok, err)
	}
	cat, _ = s.Catalog()
	if got, ok := cat.Get("stories-local"); !ok || got.Name == "operator's name" {
		t.Fatalf("after removing the custom card the installed card should return: %+v", got)
	}
	if n, err := s.RemoveArtifacts("stories-local"); n != 1 || err != nil {
		t.Fatalf("remove artifacts: %d %v", n, err)
	}
	cat, _ = s.Catalog()
	if _, ok := cat.Get("stories-local"); ok {
		t.Fatal("model still listed after its card and files were removed")
	}
	if _, ok := cat.Get(BuiltinID); !ok {
		t.Fatal("the built-in card is always there")
	}

	// A custom card for a model that is not installed is listed; Locate says why it cannot run.
	if _, err := s.AddCustom(override); err != nil {
		t.Fatal(err)
	}
	cat, _ = s.Catalog()
	if _, ok := cat.Get("stories-local"); !ok {
		t.Fatal("custom card not listed")
	}
	var nie *NotInstalledError
	if _, err := s.Locate(override); !errors.As(err, &nie) {
		t.Fatalf("locate without files: %v", err)
	}
}

func TestSidecarDetectsEdits(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, path string)
		want string
	}{
		{"byte flipped in place later", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte{0x5a}, 5000)
			f.Close()
			// The edit happens a second after the download: its mtime moves.
			later := time.Now().Add(time.Second)
			os.Chtimes(p, later, later)
		}, "sha256"},
		{"replaced by an editor's rename", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			b[5000] ^= 0xff
			tmp := p + ".new"
			os.WriteFile(tmp, b, 0o644)
			fi, _ := os.Stat(p)
			os.Chtimes(tmp, fi.ModTime(), fi.ModTime()) // same size and mtime: only the inode differs
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, "sha256"},
		{"truncated", func(t *testing.T, p string) { os.Truncate(p, 1000) }, "bytes, the manifest says"},
		{"deleted", func(t *testing.T, p string) { os.Remove(p) }, "missing"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			s := newTestStore(t)
			card, err := s.Import(t.Context(), "m", storiesPath)
			if err != nil {
				t.Fatal(err)
			}
			in, err := s.Locate(card)
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(in.Paths[0], 0o644)
			tt.edit(t, in.Paths[0])
			inv, err := s.Inventory()
			if err != nil || len(inv) != 1 {
				t.Fatalf("inventory %v %v", inv, err)
			}
			if inv[0].Installed || !strings.Contains(inv[0].Reason, tt.want) {
				t.Fatalf("after the edit: installed=%v reason %q, want %q", inv[0].Installed, inv[0].Reason, tt.want)
			}
			cat, errs := s.Catalog()
			if _, ok := cat.Get("m"); ok {
				t.Fatal("an edited artifact's card is still trusted")
			}
			var nie *NotInstalledError
			if len(errs) != 1 || !errors.As(errs[0], &nie) {
				t.Fatalf("catalog errors %v", errs)
			}
			if _, err := s.Locate(card); !errors.As(err, &nie) {
				t.Fatalf("locate: %v", err)
			}
		})
	}
}

func TestSidecarTrustsUnchangedFiles(t *testing.T) {
	s := newTestStore(t)
	card, err := s.Import(t.Context(), "m", storiesPath)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := s.Locate(card)
	// A touched but identical file is re-hashed once, then cached.
	later := time.Now().Add(2 * time.Second)
	os.Chtimes(in.Paths[0], later, later)
	if _, err := s.Locate(card); err != nil {
		t.Fatalf("identical content with a new mtime: %v", err)
	}
	fi, _ := os.Stat(in.Paths[0])
	if _, ok := s.hashes.lookup(in.Paths[0], statOf(fi)); !ok {
		t.Fatal("the re-hash was not cached")
	}
}

func TestRequirements(t *testing.T) {
	c, _ := BuiltinCard()
	r, err := c.Requirements(256)
	if err != nil {
		t.Fatal(err)
	}
	// The footprint is the planner's estimate of the one runner holding
	// every layer: weights × 1.1 + the runner overhead + fp16 KV.
	if r.KVBytesPerToken != 5*2*4*8*2 || r.KVBytes != 256*r.KVBytesPerToken || r.WeightBytes != 1171200 || r.StorageBytes != 1185376 ||
		r.OverheadBytes != 117120 || r.RunnerBytes != placement.RunnerOverheadBytes ||
		r.FootprintBytes != r.WeightBytes+r.OverheadBytes+r.RunnerBytes+r.KVBytes {
		t.Fatalf("%+v", r)
	}
	m := placement.Model{ID: c.ID, Layers: c.Layers, LayerBytes: c.LayerBytes, EmbeddingBytes: c.EmbeddingBytes, HeadBytes: c.HeadBytes,
		KVBytesPerTokenLayer: c.KVBytesPerTokenLayer(), ContextLength: c.ContextLength, CompatibleBackends: c.CompatibleBackends}
	if charge, err := placement.Charge(m, placement.Rank{Start: 0, End: c.Layers, HoldsEmbedding: true, HoldsHead: true}, 256); err != nil || charge != r.FootprintBytes {
		t.Fatalf("the planner charges %d (%v) for what the requirements call %d", charge, err, r.FootprintBytes)
	}
	if _, err := c.Requirements(c.ContextLength + 1); err == nil {
		t.Fatal("a window beyond the model's context was accepted")
	}
	if r, _ := c.Requirements(0); r.ContextTokens != c.ContextLength {
		t.Fatalf("default window %d", r.ContextTokens)
	}
}

// TestImportRefusesOverlappingTensors: a file whose tensors share bytes is
// refused with the gguf package's typed error naming both, and nothing is
// installed or left behind.
func TestImportRefusesOverlappingTensors(t *testing.T) {
	cases := []struct {
		name        string
		moved, onto string
		shift       uint64
	}{
		{"output aliases the embeddings", "output.weight", "token_embd.weight", 0},
		{"ffn_up starts inside ffn_gate", "blk.0.ffn_up.weight", "blk.0.ffn_gate.weight", 32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newTestStore(t)
			src := filepath.Join(t.TempDir(), "crafted.gguf")
			testkit.OverlapGGUF(t, storiesPath, src, c.moved, c.onto, c.shift)
			_, err := s.Import(t.Context(), "crafted", src)
			var oe *gguf.TensorOverlapError
			if !errors.As(err, &oe) || !errors.Is(err, gguf.ErrOverlap) {
				t.Fatalf("import: %v; want a *gguf.TensorOverlapError", err)
			}
			if oe.A != c.onto || oe.B != c.moved {
				t.Errorf("the error names %q and %q, want %q and %q", oe.A, oe.B, c.onto, c.moved)
			}
			insts, err := s.Inventory()
			if err != nil || len(insts) != 0 {
				t.Errorf("after a refused import the store holds %+v (%v)", insts, err)
			}
			if left, _ := os.ReadDir(filepath.Join(s.cfg.ModelsDir, ".skulk", "import")); len(left) != 0 {
				t.Errorf("the refused import left %d staging directories", len(left))
			}
		})
	}
}
