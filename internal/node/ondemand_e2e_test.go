package node_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
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

	// Concurrent requests for the unplaced model place it once.
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
	if got := strings.Count(n.logs.String(), "placing a model on demand"); got != 4 {
		t.Fatalf("%d on-demand placements logged, want 4 (one per unplaced burst)", got)
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
