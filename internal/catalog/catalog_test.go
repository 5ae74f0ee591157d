package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

func TestBuiltinCard(t *testing.T) {
	c, err := BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	// stories260K: 5 blocks, n_embd 64, 8 heads, 4 KV heads, head dim 8, 512 tokens, untied.
	if c.ID != BuiltinID || c.Arch != "llama" || c.Layers != 5 || c.HiddenSize != 64 || c.KVHeads != 4 || c.HeadDim != 8 || c.VocabSize != 512 || c.TiedEmbeddings {
		t.Fatalf("card %+v", c)
	}
	var sum int64 = c.EmbeddingBytes + c.HeadBytes
	for _, b := range c.LayerBytes {
		sum += b
	}
	if sum != c.StorageBytes || c.EmbeddingBytes != 512*64*4 {
		t.Fatalf("sizes: layers+embedding+head %d, storage %d, embedding %d", sum, c.StorageBytes, c.EmbeddingBytes)
	}
	if c.KVBytesPerToken() != 5*2*4*8*4 {
		t.Errorf("KV bytes per token %d", c.KVBytesPerToken())
	}
}

func TestMaterializeBuiltin(t *testing.T) {
	dir := t.TempDir()
	p, err := MaterializeBuiltin(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != builtinSHA256 {
		t.Fatal("materialized file differs from the embedded model")
	}
	// A damaged copy is replaced.
	os.WriteFile(p, []byte("damaged"), 0o644)
	if _, err := MaterializeBuiltin(dir); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(p)
	if s := sha256.Sum256(b); hex.EncodeToString(s[:]) != builtinSHA256 {
		t.Fatal("damaged copy was not replaced")
	}
}

type fixedSource []Card

func (f fixedSource) Cards() ([]Card, error) { return f, nil }

func TestPrecedence(t *testing.T) {
	base, _ := BuiltinCard()
	override := base
	override.Name = "operator override"
	bad := base
	bad.ID = "Bad ID"
	cat, errs := Build(fixedSource{override, bad}, Builtin{})
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	got, ok := cat.Get(BuiltinID)
	if !ok || got.Name != "operator override" {
		t.Fatalf("precedence: %+v", got)
	}
	if len(cat.List()) != 1 {
		t.Fatalf("list %v", cat.List())
	}
}

// TestEncoderCard cards the synthetic bert model (an embedding model).
func TestEncoderCard(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "models", "synthetic", "synth-bert.gguf")
	f, err := gguf.Open(path)
	if err != nil {
		t.Skipf("skipping: %v (the shared models are absent)", err)
	}
	defer f.Close()
	c, err := CardFromGGUF("synth-bert", f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arch != "bert" || c.Layers != 2 || c.HiddenSize != 64 || c.VocabSize != 30522 || c.ContextLength <= 0 ||
		len(c.Tasks) != 1 || c.Tasks[0] != "embeddings" {
		t.Fatalf("card %+v", c)
	}
	var sum int64 = c.EmbeddingBytes
	for _, b := range c.LayerBytes {
		sum += b
	}
	if sum != c.StorageBytes {
		t.Fatalf("sizes add up to %d, storage %d", sum, c.StorageBytes)
	}
}
