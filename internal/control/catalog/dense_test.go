package catalog

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/synth"
)

// TestMistral3Card checks that a mistral3 model's card reads from its GGUF
// header as a llama one's does: its shape (a head width of 128 that is not
// n_embd/n_head, grouped KV heads), its trained context, each layer's
// bytes, an untied head charged to the last shard, and the fp16 K/V cache
// the engine holds per token.
func TestMistral3Card(t *testing.T) {
	const arch = "mistral3"
	shape := synth.ArchShapes()[arch]
	mix, _ := synth.Shipped(arch)
	path := filepath.Join(t.TempDir(), "m3.gguf")
	if err := synth.WriteFileMix(path, shape, mix, rand.New(rand.NewPCG(1, 0))); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := CardFromGGUF("synth-"+arch, f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arch != arch || c.Layers != shape.NLayer || c.HiddenSize != shape.NEmbd || c.Heads != shape.NHead ||
		c.KVHeads != shape.NHeadKV || c.HeadDim != shape.HeadDim || c.HeadDim == shape.NEmbd/shape.NHead ||
		c.VocabSize != shape.NVocab || c.ContextLength != shape.CtxLen || c.TiedEmbeddings || c.ValueDim != 0 {
		t.Fatalf("card %+v, shape %+v", c, shape)
	}
	var all, head int64
	for _, ti := range f.Tensors {
		all += ti.Size
		if ti.Name == "output.weight" || ti.Name == "output_norm.weight" {
			head += ti.Size
		}
	}
	if c.HeadBytes != head {
		t.Errorf("head bytes %d, output and its norm %d", c.HeadBytes, head)
	}
	for b := range shape.NLayer {
		var layer int64
		for _, ti := range f.Tensors {
			if strings.HasPrefix(ti.Name, fmt.Sprintf("blk.%d.", b)) {
				layer += ti.Size
			}
		}
		if c.LayerBytes[b] != layer {
			t.Errorf("layer %d: card %d bytes, tensors %d", b, c.LayerBytes[b], layer)
		}
	}
	r, err := c.Requirements(512)
	if err != nil {
		t.Fatal(err)
	}
	if r.WeightBytes != all {
		t.Errorf("weight bytes %d, the file's tensors %d", r.WeightBytes, all)
	}
	cfg, err := model.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(2 * (cfg.KVDim() + cfg.VDim()) * cfg.NLayer)
	if got := c.KVBytesPerToken(); got != want || want != int64(2*2*shape.NHeadKV*shape.HeadDim*shape.NLayer) {
		t.Errorf("KV bytes a token: card %d, the engine's cache %d", got, want)
	}
}
