package node_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/testkit"
)

// TestSameTextEveryFormat sends the same greedy request through all four
// wire formats of a live node: each returns llama.cpp's continuation.
func TestSameTextEveryFormat(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	user := []map[string]any{{"role": "user", "content": "Once upon a time"}}
	texts := map[string]string{}

	code, b := n.do("POST", "/v1/chat/completions", map[string]any{"model": "stories260k", "messages": user, "temperature": 0, "max_tokens": 64})
	var oc struct {
		Choices []struct{ Message struct{ Content string } }
	}
	json.Unmarshal(b, &oc)
	if code != 200 || len(oc.Choices) == 0 {
		t.Fatalf("chat completions: %d %s", code, b)
	}
	texts["openai chat"] = oc.Choices[0].Message.Content

	code, b = n.do("POST", "/v1/responses", map[string]any{"model": "stories260k", "input": "Once upon a time", "temperature": 0, "max_output_tokens": 64})
	var rs struct {
		Output []struct {
			Type    string
			Content []struct{ Type, Text string }
		}
	}
	json.Unmarshal(b, &rs)
	for _, o := range rs.Output {
		for _, c := range o.Content {
			if o.Type == "message" && c.Type == "output_text" {
				texts["openai responses"] += c.Text
			}
		}
	}
	if code != 200 {
		t.Fatalf("responses: %d %s", code, b)
	}

	code, b = n.do("POST", "/v1/messages", map[string]any{"model": "stories260k", "messages": user, "temperature": 0, "max_tokens": 64})
	var am struct {
		Content []struct{ Type, Text string }
	}
	json.Unmarshal(b, &am)
	if code != 200 {
		t.Fatalf("anthropic messages: %d %s", code, b)
	}
	for _, c := range am.Content {
		if c.Type == "text" {
			texts["anthropic"] += c.Text
		}
	}

	code, b = n.do("POST", "/api/chat", map[string]any{"model": "stories260k", "messages": user, "stream": false,
		"options": map[string]any{"temperature": 0, "num_predict": 64}})
	var ol struct {
		Message struct{ Content string }
	}
	json.Unmarshal(b, &ol)
	if code != 200 {
		t.Fatalf("ollama chat: %d %s", code, b)
	}
	texts["ollama"] = ol.Message.Content

	for format, text := range texts {
		if text != llamaCppStory {
			t.Errorf("%s: %q, want llama.cpp's %q", format, text, llamaCppStory)
		}
	}
	if len(texts) != 4 {
		t.Fatalf("only %d formats answered: %v", len(texts), texts)
	}
}

// TestOfficialClientsLive runs the official Anthropic, Ollama and OpenAI
// Responses npm clients (pinned, from committed lock files) against a live
// node serving the demo model.
//
// With ../shared present it also imports the synthetic bert model as an
// embedding model and runs the clients' embedding checks against it.
func TestOfficialClientsLive(t *testing.T) {
	bert, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "models", "synthetic", "synth-bert.gguf"))
	n := startNode(t, t.TempDir(), "SKULK_IMPORT_DIRS="+filepath.Dir(bert))
	inst := n.place()
	n.waitStatus(inst, "ready")
	embed := ""
	if _, err := os.Stat(bert); err == nil {
		if code, b := n.do("POST", "/models/import", map[string]any{"path": bert, "id": "synth-bert"}); code != 200 {
			t.Fatalf("import synth-bert: %d %s", code, b)
		}
		code, b := n.do("POST", "/place_instance", map[string]any{"model_id": "synth-bert"})
		if code != 200 {
			t.Fatalf("place synth-bert: %d %s", code, b)
		}
		var r struct {
			InstanceID string `json:"instance_id"`
		}
		json.Unmarshal(b, &r)
		n.waitStatus(r.InstanceID, "ready")
		embed = "synth-bert"
	} else {
		t.Logf("no embedding checks: %s is absent", bert)
	}
	api := filepath.Join("..", "serving", "api", "testdata")
	cases := []struct {
		name, dir, script string
		args              []string
		env               []string
	}{
		{"anthropic", "anthropic-client", "client.mjs", []string{n.base, "stories260k"}, nil},
		{"ollama", "ollama-client", "client.mjs", []string{n.base, "stories260k"}, []string{"EMBED_MODEL=" + embed}},
		{"openai responses", "openai-client", "responses.mjs", []string{n.base + "/v1", "stories260k"}, nil},
		{"openai tools and embeddings", "openai-client", "tools.mjs", []string{n.base + "/v1", "stories260k", embed}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, node := testkit.NodeProject(t, filepath.Join(api, c.dir), c.script)
			cmd := exec.Command(node, append([]string{filepath.Join(dir, c.script)}, c.args...)...)
			cmd.Env = append(os.Environ(), c.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c.script, err, out)
			}
			if !strings.Contains(string(out), "{") {
				t.Fatalf("%s printed no report: %s", c.script, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
		})
	}
}
