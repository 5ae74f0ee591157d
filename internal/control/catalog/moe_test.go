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

// TestMoECard checks that a mixture-of-experts model's card charges each
// layer for all its experts (the 3-D ffn_*_exps tensors are most of the
// weights: a node holding a layer holds every expert, since any token may
// pick any of them) and that the one-node requirement covers every tensor.
func TestMoECard(t *testing.T) {
	for _, arch := range []string{"qwen3moe", "glm4moe", "deepseek2", "gpt-oss", "llama4"} {
		t.Run(arch, func(t *testing.T) { testMoECard(t, arch) })
	}
}

func testMoECard(t *testing.T, arch string) {
	shape := synth.ArchShapes()[arch]
	mix, _ := synth.Shipped(arch)
	path := filepath.Join(t.TempDir(), "moe.gguf")
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
	if c.Arch != arch || c.Layers != shape.NLayer || len(c.LayerBytes) != shape.NLayer {
		t.Fatalf("card: arch %q, %d layers (%d sizes)", c.Arch, c.Layers, len(c.LayerBytes))
	}
	// Blocks past the trunk (next-token prediction) are not loaded, so
	// not charged.
	var all int64
	for _, ti := range f.Tensors {
		if !strings.HasPrefix(ti.Name, fmt.Sprintf("blk.%d.", shape.NLayer)) {
			all += ti.Size
		}
	}
	for b := range shape.NLayer {
		var layer, exps int64
		for _, ti := range f.Tensors {
			if strings.HasPrefix(ti.Name, fmt.Sprintf("blk.%d.", b)) {
				layer += ti.Size
				if strings.Contains(ti.Name, "_exps.") {
					exps += ti.Size
				}
			}
		}
		// Leading dense blocks (glm4moe, deepseek2), or dense blocks
		// between the expert ones (llama4's interleave step).
		dense := b < shape.LeadingDense || (shape.MoEStep > 1 && (b+1)%shape.MoEStep != 0)
		if (exps == 0) != dense || c.LayerBytes[b] != layer {
			t.Errorf("layer %d: card %d bytes, tensors %d (of which experts %d)", b, c.LayerBytes[b], layer, exps)
		}
	}
	r, err := c.Requirements(512)
	if err != nil {
		t.Fatal(err)
	}
	if r.WeightBytes != all {
		t.Errorf("weight bytes %d, the file's tensors %d", r.WeightBytes, all)
	}
	// The KV cache charged per token is what the engine's cache holds: K
	// and V rows of every block in fp16; for latent attention, the latent
	// and the rotated key, not per-head keys and values. gpt-oss's
	// sliding-window blocks are charged in full: the engine's cache keeps
	// every position of them (it masks, it does not evict).
	cfg, err := model.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(2 * (cfg.KVDim() + cfg.VDim()) * cfg.NLayer)
	if got := c.KVBytesPerToken(); got != want {
		t.Errorf("KV bytes a token: card %d, the engine's cache %d", got, want)
	}
	if arch == "deepseek2" {
		full := int64(2 * 2 * shape.NHead * shape.KeyLenMLA * cfg.NLayer)
		if c.KVBytesPerToken() >= full {
			t.Errorf("latent attention charged %d bytes a token, no less than full K/V (%d)", c.KVBytesPerToken(), full)
		}
	}
}
