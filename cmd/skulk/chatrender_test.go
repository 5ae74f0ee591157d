package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestDevChatRender drives `skulk dev chat-render` over every reference
// case: the exact transformers render on stdout with exit 0, or exit 2 for
// the cases where the template raises.
func TestDevChatRender(t *testing.T) {
	dir := repoFile("internal", "engine", "chat", "testdata")
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	// Keep each case's raw bytes: key order inside messages matters to templates.
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for i, b := range raw {
		var c map[string]any
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tmp, "case.json")
		os.WriteFile(p, b, 0o644)
		code, out, errs := runCLI(t, "dev", "chat-render", "--templates", dir, "--case", p)
		if _, raises := c["error"]; raises {
			if code != 2 || errs == "" {
				t.Errorf("case %d %v: exit %d, stderr %q; the template raises", i, c["id"], code, errs)
			}
			continue
		}
		if code != 0 || out != c["rendered"] {
			t.Errorf("case %d %v: exit %d (%s)\n got %q\nwant %q", i, c["id"], code, errs, out, c["rendered"])
		}
	}
}
