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
	// Storage is the file's size (header and vocabulary included), not only
	// the tensors' bytes.
	if sum != 1171200 || c.StorageBytes != 1185376 || c.StorageBytes != int64(len(builtinGGUF)) || c.EmbeddingBytes != 512*64*4 {
		t.Fatalf("sizes: layers+embedding+head %d, storage %d, embedding %d", sum, c.StorageBytes, c.EmbeddingBytes)
	}
	// The runner's KV cache is fp16: 2 bytes an element.
	if c.KVBytesPerToken() != 5*2*4*8*2 {
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
	path := filepath.Join("..", "..", "..", "..", "shared", "models", "synthetic", "synth-bert.gguf")
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
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum >= c.StorageBytes || c.StorageBytes != fi.Size() {
		t.Fatalf("tensors add up to %d, storage %d, want under the file's %d bytes", sum, c.StorageBytes, fi.Size())
	}
}

// TestTinyRandomNumbers pins the numbers the CLI and the API show for
// llama-2-tiny-random: its size is the file's 1,750,560 bytes (the
// tensors are only 1,026,144 of them; the 32000-token vocabulary is most of
// the rest), and its fp16 KV cache is 2 × 2 KV heads × head dim 4 × 2 bytes
// × 1 layer = 32 bytes a token.
func TestTinyRandomNumbers(t *testing.T) {
	f, err := gguf.Open(filepath.Join("..", "..", "..", "testdata", "models", "llama-2-tiny-random.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := CardFromGGUF("tiny-random", f)
	if err != nil {
		t.Fatal(err)
	}
	if c.StorageBytes != 1750560 || c.Layers != 1 || c.KVHeads != 2 || c.HeadDim != 4 || c.KVBytesPerToken() != 32 {
		t.Fatalf("storage %d, %d layers, %d KV heads of %d, %d KV bytes a token", c.StorageBytes, c.Layers, c.KVHeads, c.HeadDim, c.KVBytesPerToken())
	}
}
