package node_test

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// TestPlaceWithCacheType: a model placed with "cache_type": "q4_0" is
// stamped so in the State and its runner decodes with that cache: the
// node's greedy completion is the engine's own with a q4_0 cache, token for
// token.
func TestPlaceWithCacheType(t *testing.T) {
	src := filepath.Join(t.TempDir(), "qwen3-q8_0.gguf")
	if err := synth.WriteFile(src, qwen3Shape, tensor.Q8_0, rand.New(rand.NewPCG(5, 6))); err != nil {
		t.Fatal(err)
	}
	const id, prompt, n = "qwen3-q8_0", "Once upon a time", 48
	// The engine's greedy text with each cache type.
	texts := map[string]string{}
	for _, ct := range []string{"f16", "q4_0"} {
		m, err := engine.Open(src, engine.Options{Threads: 1, CacheType: ct})
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		if _, err := m.Generate(t.Context(), m.EncodePrompt(prompt), engine.GenerateParams{MaxTokens: n}, func(tok engine.Token) error {
			sb.WriteString(tok.Text)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		m.Close()
		texts[ct] = sb.String()
	}
	if texts["f16"] == texts["q4_0"] {
		t.Logf("the q4_0 cache did not change this model's first %d greedy tokens", n)
	}

	nd := startNode(t, t.TempDir(), "SKULK_IMPORT_DIRS="+filepath.Dir(src))
	if code, b := nd.do("POST", "/models/import", map[string]any{"path": src, "id": id}); code != 200 {
		t.Fatalf("import: %d %s", code, b)
	}
	code, b := nd.do("POST", "/place_instance", map[string]any{"model_id": id, "cache_type": "q4_0"})
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	if err := json.Unmarshal(b, &placed); code != 200 || err != nil {
		t.Fatalf("place: %d %s", code, b)
	}
	nd.waitStatus(placed.InstanceID, "ready")
	_, b = nd.do("GET", "/state", nil)
	var st struct {
		Instances map[string]struct {
			CacheType string `json:"cache_type"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Instances[placed.InstanceID].CacheType != "q4_0" {
		t.Fatalf("the State's instance: %s", b)
	}
	code, b = nd.do("POST", "/v1/completions", map[string]any{"model": id, "prompt": prompt, "max_tokens": n, "temperature": 0})
	var doc struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &doc); code != 200 || err != nil || len(doc.Choices) != 1 {
		t.Fatalf("completion: %d %s", code, b)
	}
	if got := doc.Choices[0].Text; got != texts["q4_0"] {
		t.Fatalf("the node's text %q is not the engine's with a q4_0 cache %q (f16: %q)", got, texts["q4_0"], texts["f16"])
	}
}
