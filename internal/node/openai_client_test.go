package node_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/testkit"
)

// TestOpenAIClientLive runs the official openai npm client (pinned 6.x in
// internal/serving/api/testdata/openai-client) against a live node: the model list,
// a non-streamed and a streamed chat completion, a completion, and a 404.
func TestOpenAIClientLive(t *testing.T) {
	dir, node := testkit.NodeProject(t, filepath.Join("..", "serving", "api", "testdata", "openai-client"), "client.mjs")
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	out, err := exec.Command(node, filepath.Join(dir, "client.mjs"), n.base+"/v1", "stories260k").CombinedOutput()
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, out)
	}
	var res struct {
		Models []string `json:"models"`
		Chat   struct {
			Object, Content, FinishReason string
			Usage                         struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		} `json:"chat"`
		Stream struct {
			Chunks  int    `json:"chunks"`
			Role    string `json:"role"`
			Content string `json:"content"`
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		} `json:"stream"`
		Completion struct{ Object, Text string } `json:"completion"`
		NotFound   struct{ Status int }          `json:"not_found"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(res.Models) != 1 || res.Models[0] != "stories260k" {
		t.Errorf("models %v", res.Models)
	}
	if res.Chat.Object != "chat.completion" || res.Chat.Content == "" || res.Chat.Usage.CompletionTokens == 0 {
		t.Errorf("chat %+v", res.Chat)
	}
	// Greedy: streaming gives the same text as the whole answer.
	if res.Stream.Content != res.Chat.Content || res.Stream.Role != "assistant" || res.Stream.Usage == nil || res.Stream.Chunks < 3 {
		t.Errorf("stream %+v, chat %q", res.Stream, res.Chat.Content)
	}
	if res.Completion.Object != "text_completion" || res.Completion.Text == "" {
		t.Errorf("completion %+v", res.Completion)
	}
	if res.NotFound.Status != 404 {
		t.Errorf("unknown model answered %d", res.NotFound.Status)
	}
}
