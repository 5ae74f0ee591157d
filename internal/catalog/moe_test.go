package catalog

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
)

// TestMoECard checks that a mixture-of-experts model's card charges each
// layer for all its experts (the 3-D ffn_*_exps tensors are most of the
// weights: a node holding a layer holds every expert, since any token may
// pick any of them) and that the one-node requirement covers every tensor.
func TestMoECard(t *testing.T) {
	shape := synth.ArchShapes()["qwen3moe"]
	mix, _ := synth.Shipped("qwen3moe")
	path := filepath.Join(t.TempDir(), "moe.gguf")
	if err := synth.WriteFileMix(path, shape, mix, rand.New(rand.NewPCG(1, 0))); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := CardFromGGUF("synth-qwen3moe", f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arch != "qwen3moe" || c.Layers != shape.NLayer || len(c.LayerBytes) != shape.NLayer {
		t.Fatalf("card: arch %q, %d layers (%d sizes)", c.Arch, c.Layers, len(c.LayerBytes))
	}
	var all int64
	for _, ti := range f.Tensors {
		all += ti.Size
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
		if exps == 0 || c.LayerBytes[b] != layer {
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
}
