package node_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
)

// TestHostileChatTemplate serves an imported model whose card carries a
// hostile chat template (a macro fan-out): the runner loads, a chat request
// is a 400 with code template_limit within 2 s, a raw completion is served,
// and so is the next chat request to a model with a sound template.
func TestHostileChatTemplate(t *testing.T) {
	home := t.TempDir()
	n := startNode(t, home, "HOME="+t.TempDir(), "SKULK_OFFLINE=1")
	good, err := os.ReadFile(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(home, "models", "import", "stories.gguf")
	if err := os.WriteFile(p, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, b := n.do("POST", "/models/import", map[string]any{"path": p, "id": "fanout"}); code != 200 {
		t.Fatalf("import: %d %s", code, b)
	}
	code, b := n.do("GET", "/models/fanout", nil)
	var c catalog.Card
	if err := json.Unmarshal(b, &c); code != 200 || err != nil {
		t.Fatalf("GET /models/fanout: %d %v", code, err)
	}
	c.ChatTemplate = "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}"
	toml, err := catalog.EncodeCardTOML(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "custom_model_cards")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fanout.toml"), toml, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the card's template in the catalog", func() bool {
		code, b := n.do("GET", "/models/fanout", nil)
		return code == 200 && strings.Contains(string(b), "macro f(n)")
	})
	inst := n.placeModel("fanout", 0)
	n.waitStatus(inst, "ready")

	chat := map[string]any{"model": "fanout", "max_tokens": 8, "messages": []map[string]any{{"role": "user", "content": "Once upon a time"}}}
	start := time.Now()
	code, b = n.do("POST", "/v1/chat/completions", chat)
	took := time.Since(start)
	var doc struct {
		Error struct {
			Type string  `json:"type"`
			Code *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || code != 400 || doc.Error.Code == nil || *doc.Error.Code != "template_limit" {
		t.Fatalf("chat through the hostile template: %d %s", code, b)
	}
	if took > 2*time.Second {
		t.Errorf("refused after %v, want within 2s", took)
	}
	if code, b := n.do("POST", "/v1/completions", map[string]any{"model": "fanout", "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}); code != 200 {
		t.Fatalf("a raw completion on the same model: %d %s", code, b)
	}
	builtin := n.place()
	n.waitStatus(builtin, "ready")
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 16)); code != 200 {
		t.Fatalf("chat to a sound model after: %d %s", code, b)
	}
}
