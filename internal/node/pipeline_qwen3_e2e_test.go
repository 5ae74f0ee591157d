package node_test

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// qwen3Shape is a small synthesized qwen3 (q/k norms, NeoX rope, tied head)
// with enough blocks for a split.
var qwen3Shape = synth.Shape{Name: "qwen3", Arch: "qwen3", NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 2,
	HeadDim: 64, NFF: 512, NVocab: 1024, RopeBase: 1e6, Tied: true, CtxLen: 512}

// TestPipelineQwen3AcrossNodes: a synthesized qwen3 split across two and
// across three of three loopback nodes gives, through every node's API (for
// the 2-way split, one of them holds no stage), the same first 64 greedy
// tokens as the same model placed whole on one node.
func TestPipelineQwen3AcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	src := filepath.Join(t.TempDir(), "qwen3-q8_0.gguf")
	if err := synth.WriteFile(src, qwen3Shape, tensor.Q8_0, rand.New(rand.NewPCG(5, 6))); err != nil {
		t.Fatal(err)
	}
	const id = "qwen3-q8_0"
	nodes := importedCluster(t, src, id, 3)
	complete := func(n *clusterNode) (string, int) {
		t.Helper()
		code, b := n.do("POST", "/v1/completions", map[string]any{"model": id, "prompt": "Once upon a time",
			"max_tokens": 64, "temperature": 0})
		var doc struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(b, &doc); code != 200 || err != nil || len(doc.Choices) != 1 {
			t.Fatalf("completion: %d %s", code, b)
		}
		return doc.Choices[0].Text, doc.Usage.CompletionTokens
	}
	place := func(minNodes int) string {
		t.Helper()
		code, b := nodes[0].do("POST", "/place_instance", map[string]any{"model_id": id, "min_nodes": minNodes})
		var placed struct {
			InstanceID string `json:"instance_id"`
		}
		if err := json.Unmarshal(b, &placed); code != 200 || err != nil {
			t.Fatalf("place (min_nodes %d): %d %s", minNodes, code, b)
		}
		for _, n := range nodes {
			n.waitStatus(placed.InstanceID, "ready")
		}
		return placed.InstanceID
	}

	whole := place(1)
	want, tokens := complete(nodes[0])
	if tokens == 0 {
		t.Fatal("the whole model generated nothing")
	}
	if code, b := nodes[0].do("DELETE", "/instance/"+whole, nil); code != 200 {
		t.Fatalf("delete: %d %s", code, b)
	}
	for _, ranks := range []int{2, 3} {
		split := place(ranks)
		if st := nodes[0].state(); len(st.Instances[split].Runners) != ranks {
			t.Fatalf("the instance has %d ranks, want %d", len(st.Instances[split].Runners), ranks)
		}
		for i, n := range nodes {
			got, gotTokens := complete(n)
			if got != want || gotTokens != tokens {
				t.Fatalf("through node %d, %d-way split: %d tokens %q; whole: %d tokens %q", i, ranks, gotTokens, got, tokens, want)
			}
		}
		if code, b := nodes[0].do("DELETE", "/instance/"+split, nil); code != 200 {
			t.Fatalf("delete: %d %s", code, b)
		}
		for _, n := range nodes {
			n.waitStatus(split, "gone")
		}
	}
	t.Logf("%d greedy tokens of the synthesized qwen3 equal across 2- and 3-way splits and on one node", tokens)
}
