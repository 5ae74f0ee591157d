//go:build linux

package node_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsModelUpload: a client on another machine imports a GGUF file
// that the node cannot read (a path outside its import directories, given
// from another host) with `skulk models import FILE`, which uploads it;
// the model then serves, saying what the built-in model of the same bytes
// says.
func TestNetnsModelUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace upload test")
	}
	c := netns.New(t, netns.Options{Hosts: 1})
	n := startNet(t, c, c.Host(1), []string{"--no-mdns"})
	good, err := os.ReadFile(storiesFile)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "far-away.gguf")
	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, b := n.do("POST", "/models/import", map[string]any{"path": file, "id": "far"}); code != 404 || !strings.Contains(string(b), "outside the node's import directories") {
		t.Fatalf("path import from the client host: %d %s", code, b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.Client().Exec(ctx, "env", "SKULK_API_KEY="+n.key, "SKULK_HOST=",
		skulkBin, "models", "import", file, "--id", "far", "--host", n.host.Addr()+":52415")
	if err != nil || !strings.Contains(string(out), "imported far from "+file+" by upload") || !strings.Contains(string(out), "uploading far-away.gguf") {
		t.Fatalf("skulk models import from %s: %v\n%s", c.Client().Name(), err, out)
	}

	complete := func(model string) string {
		t.Helper()
		placeReady(t, n, model)
		code, b := n.do("POST", "/v1/completions", map[string]any{"model": model, "prompt": "Once upon a time", "max_tokens": 48, "temperature": 0})
		var doc struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if code != 200 || json.Unmarshal(b, &doc) != nil || len(doc.Choices) != 1 {
			t.Fatalf("completion of %s: %d %s", model, code, b)
		}
		return doc.Choices[0].Text
	}
	if got, want := complete("far"), complete("stories260k"); got != want || got == "" {
		t.Fatalf("the uploaded model says %q, the built-in one %q", got, want)
	}
}
