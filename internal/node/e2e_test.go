package node_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestServeDeleteRestart drives a real node over HTTP: place the demo model,
// chat streaming and not (llama.cpp's greedy text), 16 concurrent streams,
// delete, place again, restart and find the instance back and serving.
func TestServeDeleteRestart(t *testing.T) {
	home := t.TempDir()
	n := startNode(t, home)
	unknown := storyRequest(false, 64)
	unknown["model"] = "no-such-model"
	if code, b := n.do("POST", "/v1/chat/completions", unknown); code != 404 || !strings.Contains(string(b), "no-such-model") {
		t.Fatalf("chat with a model outside the catalog: %d %s", code, b)
	}
	inst := n.place()
	n.waitStatus(inst, "ready")

	code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64))
	if code != 200 {
		t.Fatalf("chat: %d %s", code, b)
	}
	var resp struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role, Content string
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	json.Unmarshal(b, &resp)
	if resp.Object != "chat.completion" || resp.Choices[0].Message.Content != llamaCppStory || resp.Choices[0].FinishReason != "length" {
		t.Fatalf("non-streamed answer: %s", b)
	}
	if resp.Usage.PromptTokens != 5 || resp.Usage.CompletionTokens != 64 {
		t.Errorf("usage %+v (the prompt is BOS + 4 tokens, 64 generated)", resp.Usage)
	}

	// 16 concurrent streams all produce the reference text.
	var wg sync.WaitGroup
	results := make([]sseResult, 16)
	errs := make([]error, 16)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = n.stream(context.Background(), storyRequest(true, 64), nil)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil || r.content != llamaCppStory || r.finish != "length" || !r.done {
			t.Fatalf("stream %d: %v %+v", i, errs[i], r)
		}
	}

	// Delete: the instance goes.
	if code, b := n.do("DELETE", "/instance/"+inst, nil); code != 200 {
		t.Fatalf("delete: %d %s", code, b)
	}
	n.waitStatus(inst, "gone")
	// A chat then loads the model again, on demand, as a new instance;
	// deleting by the model's name stops it.
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 8)); code != 200 {
		t.Fatalf("chat after delete (loaded on demand): %d %s", code, b)
	}
	code, b = n.do("DELETE", "/instance/stories260k", nil)
	var stopped struct {
		InstanceIDs []string `json:"instance_ids"`
	}
	json.Unmarshal(b, &stopped)
	if code != 200 || len(stopped.InstanceIDs) != 1 || stopped.InstanceIDs[0] == inst {
		t.Fatalf("delete of the instance loaded on demand: %d %s", code, b)
	}
	n.waitStatus(stopped.InstanceIDs[0], "gone")

	// Place again, store a response, restart the node: the placement
	// survives and serves, and the response can be continued.
	inst = n.place()
	n.waitStatus(inst, "ready")
	type response struct {
		ID     string `json:"id"`
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
		OutputText string `json:"-"`
	}
	respond := func(req map[string]any) response {
		t.Helper()
		req["model"], req["temperature"], req["max_output_tokens"] = "stories260k", 0, 12
		code, b := n.do("POST", "/v1/responses", req)
		var r response
		if err := json.Unmarshal(b, &r); code != 200 || err != nil || len(r.Output) != 1 || len(r.Output[0].Content) != 1 {
			t.Fatalf("response to %v: %d %s", req, code, b)
		}
		r.OutputText = r.Output[0].Content[0].Text
		return r
	}
	first := respond(map[string]any{"input": "Once upon a time"})
	before := n.state()
	n.stop()
	n = startNode(t, home)
	after := n.state()
	if _, ok := after.Instances[inst]; !ok {
		t.Fatalf("instance %s lost on restart (before: %d instances)", inst, len(before.Instances))
	}
	n.waitStatus(inst, "ready")
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64)); code != 200 || !strings.Contains(string(b), "Lily") {
		t.Fatalf("chat after restart: %d %s", code, b)
	}
	// The continuation is the same prompt and answer as sending the whole
	// conversation again.
	continued := respond(map[string]any{"input": "Then", "previous_response_id": first.ID})
	whole := respond(map[string]any{"input": []map[string]any{
		{"role": "user", "content": "Once upon a time"},
		{"role": "assistant", "content": first.OutputText},
		{"role": "user", "content": "Then"},
	}})
	if continued.Usage.InputTokens != whole.Usage.InputTokens || continued.OutputText != whole.OutputText {
		t.Fatalf("response %s continued after the restart: %d input tokens, %q; the whole conversation sent again: %d, %q",
			first.ID, continued.Usage.InputTokens, continued.OutputText, whole.Usage.InputTokens, whole.OutputText)
	}
}

// TestRunnerCrash kills the runner mid-stream: the request ends with an
// error event and the runner comes back; killing it until the crash breaker
// trips marks the instance failed with a crash_loop record in /state.
func TestRunnerCrash(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	pid := n.cmd.Process.Pid

	killRunner := func() {
		t.Helper()
		pids := runnerPIDs(pid)
		if len(pids) != 1 {
			t.Fatalf("want one runner process, found %v", pids)
		}
		syscall.Kill(pids[0], syscall.SIGKILL)
	}
	// A long greedy story; kill the runner after the first chunks arrive.
	res, err := n.stream(context.Background(), storyRequest(true, 1500), func(chunks int, _ string) {
		if chunks == 3 {
			killRunner()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.errMsg == "" || res.done {
		t.Fatalf("stream through a runner crash ended without an error event: %+v", res)
	}
	// The worker restarts the runner.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := n.state()
		if in := s.Instances[inst]; in.Status == "ready" && len(runnerPIDs(pid)) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runner did not come back: %+v", s.Instances[inst])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64)); code != 200 || !strings.Contains(string(b), "Lily") {
		t.Fatalf("chat after the runner came back: %d %s", code, b)
	}
	// Two more crashes within the window exhaust the breaker (3 failures).
	for i := 0; i < 2; i++ {
		n.waitStatus(inst, "ready")
		for len(runnerPIDs(pid)) != 1 {
			time.Sleep(20 * time.Millisecond)
		}
		killRunner()
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		s := n.state()
		failed := false
		for _, f := range s.Failures {
			failed = failed || (f.Instance == inst && f.Category == "crash_loop")
		}
		if failed && s.Instances[inst].Status == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crash breaker did not mark the instance failed: %+v %+v", s.Instances[inst], s.Failures)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBadInput sends malformed and hostile requests to a live node: each
// gets a clear OpenAI-shaped error and the node keeps serving.
func TestBadInput(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")
	huge := `{"model":"stories260k","messages":[{"role":"user","content":"` + strings.Repeat("a", 5<<20) + `"}]}`
	cases := []struct {
		name string
		body any
		code int
		want string
	}{
		{"malformed JSON", `{"model": "stories260k", "messages": [`, 400, "invalid_request_error"},
		{"wrong type", map[string]any{"model": "stories260k", "messages": "hello"}, 400, "messages"},
		{"unknown model", map[string]any{"model": "nope", "messages": []map[string]any{{"role": "user", "content": "hi"}}}, 404, "nope"},
		{"absurd max_tokens", map[string]any{"model": "stories260k", "max_tokens": 1e12, "messages": []map[string]any{{"role": "user", "content": "hi"}}}, 400, "max_tokens"},
		{"n > 1", map[string]any{"model": "stories260k", "n": 3, "messages": []map[string]any{{"role": "user", "content": "hi"}}}, 400, "n"},
		{"huge body", huge, 413, "error"},
	}
	for _, c := range cases {
		code, b := n.do("POST", "/v1/chat/completions", c.body)
		if code != c.code || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: %d %s", c.name, code, truncate(b))
		}
	}
	for _, ct := range []string{"q5_1", "q8_0"} { // q8_0: stories260K's head_dim 8 holds no block
		if code, b := n.do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "cache_type": ct}); code != 400 || !strings.Contains(string(b), "cache_type") {
			t.Errorf("cache_type %s: %d %s, want a 400 naming cache_type", ct, code, b)
		}
	}
	if code, b := n.do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "context_tokens": 1 << 22}); code != 400 {
		t.Errorf("oversized context placement: %d %s", code, b)
	}
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64)); code != 200 || !strings.Contains(string(b), "Lily") {
		t.Fatalf("the node stopped serving after bad input: %d %s", code, b)
	}
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
