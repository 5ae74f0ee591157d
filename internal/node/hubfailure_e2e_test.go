package node_test

import (
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

// TestHubFailuresSayWhatToDo: the Hub's refusals reach the user once, as
// what they are: a gated repository asks for the node's HF_TOKEN (never
// for the cluster's API key, which a 401 of the node's own would), a
// missing one for its name, and a download that fails verification is
// reported once, by the CLI and in the node's log.
func TestHubFailuresSayWhatToDo(t *testing.T) {
	hub := hubstandin.New(t)
	hub.AddRepo("owner/gated", "secret-token", hubstandin.File{Path: "m-Q8_0.gguf", Local: storiesFile, LFS: true})
	hub.AddRepo("owner/open", "", hubstandin.File{Path: "m-Q8_0.gguf", Local: storiesFile, LFS: true})
	n := startNode(t, t.TempDir(), "HF_ENDPOINT="+hub.URL(), "HF_TOKEN=")

	for _, c := range []struct {
		ref, want string
	}{
		{"hf:owner/gated", "set HF_TOKEN in the node's environment"},
		{"hf:owner/missing", "check the name"},
		{"hf:owner/open/nofile.gguf", "has no file nofile.gguf"},
	} {
		code, out := n.cli("models", "add", c.ref)
		if code != 1 || !strings.Contains(out, c.want) || strings.Contains(out, "SKULK_API_KEY") || strings.Contains(out, "'skulk models add' adds") {
			t.Errorf("skulk models add %s: exit %d, want %q and no API-key or add hint:\n%s", c.ref, code, c.want, out)
		}
	}
	if code, b := n.do("POST", "/models/add", map[string]any{"ref": "hf:owner/gated"}); code != 502 {
		t.Errorf("add of a gated repository: %d %s, want 502 (the Hub refused the node)", code, b)
	}

	if code, out := n.cli("models", "add", "hf:owner/open"); code != 0 {
		t.Fatalf("add: exit %d\n%s", code, out)
	}
	hub.CorruptAt(100)
	code, out := n.cli("pull", "m-q8_0")
	const what = "checksum"
	if code != 1 || strings.Count(out, what) != 1 {
		t.Fatalf("pull of a corrupted download: exit %d, want the failure once:\n%s", code, out)
	}
	if got := strings.Count(n.logs.String(), "the Hub published"); got != 1 {
		t.Fatalf("the node logged the failed download %d times, want once:\n%s", got, n.logs.String())
	}
}
