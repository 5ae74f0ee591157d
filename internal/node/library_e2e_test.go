package node_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/models/shortname"
	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

// TestLibraryNames pulls a model by its short name of the built-in library
// and runs it by name. The stand-in Hub publishes the repositories and
// files the real library names for smollm2 (its default tag 1.7b, and
// 135m), each holding the small real stories260K GGUF: the node reads the
// embedded library as in production, only the Hub is a stand-in.
//
// A bare family name pulls the default tag, pinned to the commit, under the
// library name as its id; GET /models/library says it is installed; skulk
// run, a completion request and skulk stop take the bare name and the
// full one; a library name not pulled yet, a typo and an add of an unknown
// name are 404s that name skulk pull and the nearest names; and skulk run
// of a name not pulled yet pulls it.
func TestLibraryNames(t *testing.T) {
	lib, err := shortname.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	def, ok := lib.Lookup("smollm2")
	small, ok2 := lib.Lookup("smollm2:135m")
	if !ok || !ok2 || def.Name == small.Name {
		t.Fatalf("the library has no smollm2 default (%v) and smollm2:135m (%v)", ok, ok2)
	}
	hubSrv := hubstandin.New(t)
	commit := hubSrv.AddRepo(def.Repo, "", hubstandin.File{Path: def.File, Local: storiesFile, LFS: true})
	hubSrv.AddRepo(small.Repo, "", hubstandin.File{Path: small.File, Local: storiesFile, LFS: true})
	n := startNode(t, t.TempDir(), "HF_ENDPOINT="+hubSrv.URL(), "HF_TOKEN=")

	// skulk pull with the bare family name: added under the default tag's
	// name, pinned, downloaded.
	code, out := n.cli("pull", "smollm2")
	if code != 0 || !strings.Contains(out, "added "+def.Name+" to the catalog") || !strings.Contains(out, def.Name+" is installed") {
		t.Fatalf("pull smollm2: exit %d: %s", code, out)
	}
	if code, m := n.model(def.Name); code != 200 || !m.Installed || m.Repo != def.Repo || m.Revision != commit || len(m.Files) != 1 || m.Files[0] != def.File {
		t.Fatalf("after pull: %d %+v", code, m)
	}
	// GET /models/{bare name} shows the model it resolves to.
	if code, m := n.model("smollm2"); code != 200 || m.ID != def.Name {
		t.Fatalf("GET /models/smollm2: %d %+v", code, m)
	}

	// The library listing, over the API and the CLI.
	code, b := n.do("GET", "/models/library", nil)
	var listing struct {
		Data []struct {
			Name      string `json:"name"`
			Size      int64  `json:"size_bytes"`
			InCatalog bool   `json:"in_catalog"`
			Installed bool   `json:"installed"`
			ModelID   string `json:"model_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &listing); code != 200 || err != nil || len(listing.Data) != len(lib.Entries()) {
		t.Fatalf("GET /models/library: %d %v %s", code, err, b)
	}
	for _, e := range listing.Data {
		want := e.Name == def.Name
		if e.Installed != want || e.InCatalog != want || (want && e.ModelID != def.Name) || e.Size <= 0 {
			t.Errorf("library entry %+v", e)
		}
	}
	if code, out := n.cli("list", "--library"); code != 0 || !strings.Contains(out, def.Name+" *") || !strings.Contains(out, "installed") || !strings.Contains(out, "qwen3:8b *") {
		t.Fatalf("list --library: exit %d: %s", code, out)
	}
	if code, out := n.cli("models", "list", "--library", "--json"); code != 0 || !strings.Contains(out, `"name":"gpt-oss:20b"`) {
		t.Fatalf("models list --library --json: exit %d: %s", code, out)
	}

	// skulk run with the bare name places the model and answers.
	code, out = n.cli("run", "smollm2", "Once upon a time", "--max-tokens", "8", "--temperature", "0")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("run smollm2: exit %d: %s", code, out)
	}
	// A completion names the model by either name.
	for _, name := range []string{"smollm2", def.Name, "smollm2:latest"} {
		if got := n.completion(name); got != llamaCppStory {
			t.Fatalf("completion by %s: %q", name, got)
		}
	}
	if code, out := n.cli("ps"); code != 0 || !strings.Contains(out, def.Name) {
		t.Fatalf("ps: exit %d: %s", code, out)
	}
	if code, out := n.cli("stop", "smollm2"); code != 0 || !strings.Contains(out, "stopped ") {
		t.Fatalf("stop smollm2: exit %d: %s", code, out)
	}

	// Not pulled, a typo, an unknown add: 404s naming skulk pull.
	chat := func(model string) (int, string) {
		code, b := n.do("POST", "/v1/chat/completions", map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "hi"}}})
		return code, string(b)
	}
	if code, b := chat(small.Name); code != 404 || !strings.Contains(b, "skulk pull "+small.Name) {
		t.Fatalf("chat with %s before its pull: %d %s", small.Name, code, b)
	}
	if code, b := chat("smolm2:135m"); code != 404 || !strings.Contains(b, "did you mean "+small.Name) || !strings.Contains(b, "skulk pull") {
		t.Fatalf("chat with a typo: %d %s", code, b)
	}
	if code, b := n.do("POST", "/models/add", map[string]any{"ref": "qwen4:8b"}); code != 404 || !strings.Contains(string(b), "qwen3:8b") {
		t.Fatalf("add qwen4:8b: %d %s", code, b)
	}
	if code, out := n.cli("pull", "gemma4"); code != 1 || !strings.Contains(out, "did you mean") || !strings.Contains(out, "gemma3:") {
		t.Fatalf("pull gemma4: exit %d: %s", code, out)
	}

	// skulk run of a library name not pulled yet pulls it first, as
	// ollama run does.
	code, out = n.cli("run", small.Name, "Once upon a time", "--max-tokens", "8", "--temperature", "0")
	if code != 0 || !strings.Contains(out, "added "+small.Name+" to the catalog") || !strings.Contains(out, small.Name+" is installed") {
		t.Fatalf("run %s: exit %d: %s", small.Name, code, out)
	}
	if got := n.completion(small.Name); got != llamaCppStory {
		t.Fatalf("completion by %s: %q", small.Name, got)
	}
}
