package node_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit"
)

// instancesOf lists the instances of stories260k in the node's State, with
// whether each was placed on demand.
func (n *node) demoInstances() map[string]bool {
	n.t.Helper()
	code, b := n.do("GET", "/state", nil)
	if code != 200 {
		n.t.Fatalf("GET /state: %d %s", code, b)
	}
	var s struct {
		Instances map[string]struct {
			Model    string `json:"model"`
			OnDemand bool   `json:"on_demand"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		n.t.Fatal(err)
	}
	out := map[string]bool{}
	for id, in := range s.Instances {
		if in.Model == "stories260k" {
			out[id] = in.OnDemand
		}
	}
	return out
}

// onlyInstance is the one instance of stories260k, which must be on demand.
func (n *node) onlyOnDemand() string {
	n.t.Helper()
	insts := n.demoInstances()
	if len(insts) != 1 {
		n.t.Fatalf("want one instance of stories260k, have %v", insts)
	}
	for id, od := range insts {
		if !od {
			n.t.Fatalf("instance %s was placed by a request but is not marked on_demand", id)
		}
		return id
	}
	return ""
}

// TestLoadOnDemand: a request for a catalog model with no instance places
// it, is answered, and the instance unloads once idle for its keep-alive
// (SKULK_KEEP_ALIVE, or Ollama's keep_alive); an explicit placement and
// keep_alive < 0 stay.
func TestLoadOnDemand(t *testing.T) {
	n := startNode(t, t.TempDir(), "SKULK_KEEP_ALIVE=1s")
	ollamaChat := func(keepAlive any) (int, []byte) {
		body := map[string]any{"model": "stories260k", "stream": false, "options": map[string]any{"num_predict": 4, "temperature": 0},
			"messages": []map[string]any{{"role": "user", "content": "Once upon a time"}}}
		if keepAlive != nil {
			body["keep_alive"] = keepAlive
		}
		return n.do("POST", "/api/chat", body)
	}

	// Ollama's list shows the installed model before anything is placed.
	if code, b := n.do("GET", "/api/tags", nil); code != 200 || !strings.Contains(string(b), `"name":"stories260k"`) {
		t.Fatalf("/api/tags does not list the installed model: %d %s", code, b)
	}
	// OpenAI, not streamed: placed, answered, unloaded after 1 s idle.
	code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 8))
	if code != 200 || !strings.Contains(string(b), `"content"`) {
		t.Fatalf("chat for an unplaced model: %d %s", code, b)
	}
	inst := n.onlyOnDemand()
	code, b = n.do("GET", "/api/ps", nil)
	if code != 200 || !strings.Contains(string(b), `"expires_at"`) {
		t.Fatalf("/api/ps of an idle on-demand instance has no expires_at: %d %s", code, b)
	}
	n.waitStatus(inst, "gone")

	// OpenAI streamed: nothing is sent until the model is ready.
	res, err := n.stream(context.Background(), storyRequest(true, 8), nil)
	if err != nil || res.errMsg != "" || res.content == "" || !res.done {
		t.Fatalf("streamed chat for an unplaced model: %+v %v", res, err)
	}
	n.waitStatus(n.onlyOnDemand(), "gone")

	// Ollama with keep_alive 0: unloaded right after the request.
	if code, b := ollamaChat(0); code != 200 || !strings.Contains(string(b), `"done":true`) {
		t.Fatalf("ollama chat for an unplaced model: %d %s", code, b)
	}
	n.waitStatus(n.onlyOnDemand(), "gone")

	// Anthropic and Responses: placed, answered, unloaded the same way.
	for _, c := range []struct {
		path string
		body map[string]any
		want string
	}{
		{"/v1/messages", map[string]any{"model": "stories260k", "max_tokens": 8, "keep_alive": 0,
			"messages": []map[string]any{{"role": "user", "content": "Once upon a time"}}}, `"type":"message"`},
		{"/v1/responses", map[string]any{"model": "stories260k", "max_output_tokens": 16, "input": "Once upon a time"}, `"object":"response"`},
	} {
		if code, b := n.do("POST", c.path, c.body); code != 200 || !strings.Contains(string(b), c.want) {
			t.Fatalf("%s for an unplaced model: %d %s", c.path, code, b)
		}
		n.waitStatus(n.onlyOnDemand(), "gone")
	}

	// Ollama's idioms with nothing to generate: load, then unload.
	for _, c := range []struct {
		body   map[string]any
		reason string
	}{
		{map[string]any{"model": "stories260k", "stream": false}, `"done_reason":"load"`},
		{map[string]any{"model": "stories260k", "stream": false, "keep_alive": 0}, `"done_reason":"unload"`},
	} {
		if code, b := n.do("POST", "/api/generate", c.body); code != 200 || !strings.Contains(string(b), c.reason) {
			t.Fatalf("ollama generate %v: %d %s", c.body, code, b)
		}
		if c.reason == `"done_reason":"load"` {
			n.waitStatus(n.onlyOnDemand(), "ready")
			continue
		}
		if insts := n.demoInstances(); len(insts) != 0 {
			t.Fatalf("after the unload idiom: %v", insts)
		}
	}

	// The official ollama npm client: list, ps, generate on demand, unload.
	t.Run("ollama npm client", func(t *testing.T) {
		dir, node := testkit.NodeProject(t, filepath.Join("..", "serving", "api", "testdata", "ollama-client"), "ondemand.mjs")
		out, err := exec.Command(node, filepath.Join(dir, "ondemand.mjs"), n.base, "stories260k").CombinedOutput()
		if err != nil {
			t.Fatalf("ondemand.mjs: %v\n%s", err, out)
		}
		t.Logf("%s", strings.TrimSpace(string(out)))
	})

	// Concurrent requests for the unplaced model place it once.
	placements := strings.Count(n.logs.String(), "placing a model on demand")
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Go(func() { codes[i], _ = ollamaChat("10m") })
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("concurrent request %d: %d", i, c)
		}
	}
	od := n.onlyOnDemand()
	if got := strings.Count(n.logs.String(), "placing a model on demand") - placements; got != 1 {
		t.Fatalf("4 concurrent requests logged %d on-demand placements, want 1", got)
	}
	// keep_alive < 0 keeps it; so does an explicit placement.
	if code, b := ollamaChat(-1); code != 200 {
		t.Fatalf("ollama chat keep_alive -1: %d %s", code, b)
	}
	explicit := n.place()
	n.waitStatus(explicit, "ready")
	// (No request after this: each sets the keep-alive of the instance it
	// runs on, as in Ollama.)
	time.Sleep(2500 * time.Millisecond)
	insts := n.demoInstances()
	if len(insts) != 2 || !insts[od] || insts[explicit] {
		t.Fatalf("after 2.5 s idle, want the kept on-demand %s and the explicit %s, have %v", od, explicit, insts)
	}

	// A model outside the catalog is still refused with a hint.
	code, b = n.do("POST", "/v1/chat/completions", map[string]any{"model": "no-such-model", "messages": []map[string]any{{"role": "user", "content": "hi"}}})
	if code != 404 {
		t.Fatalf("unknown model: %d %s", code, b)
	}
}
