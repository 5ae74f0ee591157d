package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClientDisconnectCancels: a client that goes away mid-stream cancels
// its task; the task leaves the State long before the generation could have
// finished.
func TestClientDisconnectCancels(t *testing.T) {
	n := startArgs(t, []string{"run", "--home", t.TempDir(), "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1", "--log-level", "debug"}, nil)
	inst := n.place()
	n.waitStatus(inst, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	n.stream(ctx, storyRequest(true, 1900), func(chunks int, _ string) {
		if chunks == 3 {
			cancel()
		}
	})
	// The worker records the task as cancelled (not failed) once the
	// runner has let it go.
	for !strings.Contains(n.logs.String(), `msg="task ended"`) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the task did not end 10 s after the client left:\n%s", n.logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("task ended %v after the request started", time.Since(start))
	for _, l := range strings.Split(n.logs.String(), "\n") {
		if strings.Contains(l, `msg="task ended"`) && !strings.Contains(l, "outcome=cancelled") {
			t.Fatalf("a disconnected client's task is recorded as: %s", l)
		}
	}
	if code, b := n.do("POST", "/v1/chat/completions", storyRequest(false, 64)); code != 200 || !strings.Contains(string(b), "Lily") {
		t.Fatalf("node after a cancelled task: %d %s", code, b)
	}
}

// TestAPIKey: with SKULK_API_KEY set, every route needs the bearer key.
func TestAPIKey(t *testing.T) {
	n := startNode(t, t.TempDir(), "SKULK_API_KEY=test-key-123")
	for _, path := range []string{"/state", "/v1/models", "/models", "/instance/previews?model_id=stories260k"} {
		if code, _ := n.do("GET", path, nil); code != 401 {
			t.Errorf("GET %s without the key: %d", path, code)
		}
		req, _ := http.NewRequest("GET", n.base+path, nil)
		req.Header.Set("Authorization", "Bearer test-key-123")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s with the key: %d", path, resp.StatusCode)
		}
	}
	if code, _ := n.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"}); code != 401 {
		t.Errorf("placement without the key: %d", code)
	}
	if strings.Contains(n.logs.String(), "test-key-123") {
		t.Error("the API key appears in the node's logs")
	}
}

// TestPreviewsAndCatalog reads the control routes a dashboard uses.
func TestPreviewsAndCatalog(t *testing.T) {
	n := startNode(t, t.TempDir())
	var pv struct {
		Previews []struct {
			Width          int   `json:"width"`
			ContextCeiling int   `json:"context_ceiling"`
			MemoryBytes    int64 `json:"memory_bytes"`
		} `json:"previews"`
	}
	// Until the node has published its own resources there is nothing to
	// place on, and the previews are empty; on a loaded machine that can
	// take a moment after startup.
	var code int
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, b = n.do("GET", "/instance/previews?model_id=stories260k", nil)
		if code != 200 || !strings.Contains(string(b), `"previews"`) {
			t.Fatalf("previews: %d %s", code, b)
		}
		pv.Previews = nil
		json.Unmarshal(b, &pv)
		if len(pv.Previews) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(pv.Previews) == 0 || pv.Previews[0].Width != 1 || pv.Previews[0].ContextCeiling != 2048 || pv.Previews[0].MemoryBytes <= 0 {
		t.Errorf("previews %s", b)
	}
	// Per cache type: stories260K's head_dim 8 holds no q8_0/q4_0 block,
	// so only fp16 and f32 are listed, f32 costing more memory.
	var byType struct {
		CacheType string `json:"cache_type"`
		ByType    map[string][]struct {
			MemoryBytes     int64 `json:"memory_bytes"`
			KVBytesPerToken int64 `json:"kv_bytes_per_token"`
		} `json:"previews_by_cache_type"`
	}
	json.Unmarshal(b, &byType)
	if f16, f32 := byType.ByType["f16"], byType.ByType["f32"]; byType.CacheType != "f16" || len(f16) == 0 || len(f32) == 0 ||
		f32[0].KVBytesPerToken != 2*f16[0].KVBytesPerToken || byType.ByType["q8_0"] != nil {
		t.Errorf("previews by cache type %s", b)
	}
	if code, b := n.do("GET", "/instance/previews?model_id=nope", nil); code != 404 {
		t.Errorf("previews of an unknown model: %d %s", code, b)
	}
	code, b = n.do("GET", "/models", nil)
	if code != 200 || !strings.Contains(string(b), `"stories260k"`) || !strings.Contains(string(b), `"placement":"none"`) {
		t.Fatalf("catalog: %d %s", code, b)
	}
}

// TestResponsesSurviveNodeKill stores a response, SIGKILLs its node (no
// shutdown, no fsync: the journal's record is in the page cache once the
// response is answered) and continues the response through the restarted
// node.
func TestResponsesSurviveNodeKill(t *testing.T) {
	home := t.TempDir()
	n := startNode(t, home)
	inst := n.place()
	n.waitStatus(inst, "ready")
	req := map[string]any{"model": "stories260k", "input": "Once upon a time", "max_output_tokens": 8, "temperature": 0}
	code, b := n.do("POST", "/v1/responses", req)
	var first struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &first); code != 200 || err != nil || first.ID == "" {
		t.Fatalf("response: %d %s", code, b)
	}
	syscall.Kill(n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.done
	n = startNode(t, home)
	req["input"], req["previous_response_id"] = "Then", first.ID
	// Until the relaunched runner is up the node answers 503 "still
	// loading"; a client retries that.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := n.do("POST", "/v1/responses", req)
		if code == 200 {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("continuing %s after SIGKILL and restart: %d %s", first.ID, code, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
