package node_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/synth"
)

// TestPipelineGptOssAcrossNodes: the small gpt-oss `skulk dev synth --arch
// gpt-oss` writes (MXFP4 experts, a 16-position window on the even
// blocks), split across two nodes, gives through either node the first 64
// greedy tokens of the whole model: far past the window.
func TestPipelineGptOssAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	src := filepath.Join(t.TempDir(), "gpt-oss.gguf")
	mix, _ := synth.Shipped("gpt-oss")
	if err := synth.WriteFileMix(src, synth.ArchShapes()["gpt-oss"], mix, rand.New(rand.NewPCG(5, 6))); err != nil {
		t.Fatal(err)
	}
	splitEqualsWhole(t, src, "gpt-oss-mxfp4-moe")
}
