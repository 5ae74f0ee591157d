package node_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit"
)

// TestImportHostileGGUF imports the hostile GGUF corpus into a live node
// through its API: each file is a 400 in OpenAI's error shape naming the
// path, within 1 s, nothing enters the catalog, and the node keeps serving
// (a real model imports after them all).
func TestImportHostileGGUF(t *testing.T) {
	userHome, home := t.TempDir(), t.TempDir()
	n := startNode(t, home, "HOME="+userHome, "SKULK_OFFLINE=1")
	importDir := filepath.Join(home, "models", "import")
	for _, c := range testkit.HostileGGUFCorpus() {
		t.Run(c.Name, func(t *testing.T) {
			p := filepath.Join(importDir, "hostile.gguf")
			if err := os.WriteFile(p, c.Build(), 0o600); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			code, b := n.do("POST", "/models/import", map[string]any{"path": p, "id": "hostile"})
			took := time.Since(start)
			var doc struct {
				Error struct {
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Message string  `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(b, &doc); err != nil || code != 400 || doc.Error.Type != "invalid_request_error" ||
				doc.Error.Param == nil || *doc.Error.Param != "path" || !strings.Contains(doc.Error.Message, "not a usable GGUF file") {
				t.Fatalf("import: %d %s (%v)", code, b, err)
			}
			// The goal is 1 s (typically 0.3 s); the bound leaves room for a loaded CI machine.
			if took > 3*time.Second {
				t.Errorf("answered after %v, want within 1s", took)
			}
		})
	}
	if _, ok := n.catalogEntries()["hostile"]; ok {
		t.Fatal("a hostile file entered the catalog")
	}
	good, err := os.ReadFile(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(importDir, "stories.gguf")
	if err := os.WriteFile(p, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, b := n.do("POST", "/models/import", map[string]any{"path": p, "id": "after"}); code != 200 {
		t.Fatalf("a real import after the corpus: %d %s", code, b)
	}
}
