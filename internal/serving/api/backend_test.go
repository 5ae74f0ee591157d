package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/serving/request"
)

// testBackend is a deterministic Backend for the HTTP tests. It "generates"
// by echoing the words of the last message (or the prompt), one delta per
// word, with usage counted in words, so every answer is predictable. The
// model name selects other behaviours:
//
//	echo        the echo described above (honours max_tokens, stop
//	            sequences, logprobs, tools and
//	            chat_template_kwargs.enable_thinking)
//	fail-first  an error chunk (unavailable) before any output
//	fail-after  two deltas, then an error chunk (internal, "runner crashed")
//	silent      one delta, then the channel closes without a final chunk
//	block       one delta, then waits for cancellation and reports ctx.Err()
//	            on cancelled
//	panic       Generate panics
//	gpt-oss     a fixed harmony-format generation run through the real
//	            output parser (harmony_test.go)
//
// Any other model has no ready instance: Generate returns a not_found
// error that says how to place it, as the node's Backend does. Every
// goroutine it starts is waited for in the test's cleanup.
type testBackend struct {
	cancelled chan error // block's observation of ctx.Err(); buffered
	wg        sync.WaitGroup

	mu        sync.Mutex // guards the fields below
	lastPlace request.PlaceRequest
	lastReq   request.Request
	deleted   []ids.InstanceID
}

func newTestBackend(t *testing.T) *testBackend {
	t.Helper()
	b := &testBackend{cancelled: make(chan error, 8)}
	t.Cleanup(b.wg.Wait)
	return b
}

func (b *testBackend) Generate(ctx context.Context, req request.Request) (<-chan request.Chunk, error) {
	b.mu.Lock()
	b.lastReq = req
	b.mu.Unlock()
	var script []request.Chunk
	switch req.Model {
	case "echo":
		script = echo(req)
	case "gpt-oss":
		script = harmonyScript(req)
	case "fail-first":
		script = []request.Chunk{{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassUnavailable, "the instance is loading; retry shortly")}}
	case "fail-after":
		script = []request.Chunk{
			{Kind: request.ChunkDelta, Content: "a"}, {Kind: request.ChunkDelta, Content: "b"},
			{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "runner crashed")},
		}
	case "silent", "block":
		script = []request.Chunk{{Kind: request.ChunkDelta, Content: "a"}}
	case "panic":
		panic("test backend: panic model")
	default:
		return nil, &fault.Error{Class: fault.ClassNotFound, Param: "model",
			Message: fmt.Sprintf("model %q has no ready instance; place it with POST /place_instance {\"model_id\":%q}", req.Model, req.Model)}
	}
	ch := make(chan request.Chunk)
	b.wg.Go(func() {
		defer close(ch)
		for _, c := range script {
			select {
			case ch <- c:
			case <-ctx.Done():
				b.cancelled <- ctx.Err()
				return
			}
		}
		if req.Model == "block" {
			<-ctx.Done()
			b.cancelled <- ctx.Err()
		}
	})
	return ch, nil
}

// echo scripts the echo model's answer.
func echo(req request.Request) []request.Chunk {
	text, promptWords := req.Prompt, len(strings.Fields(req.Prompt))
	if req.Chat {
		promptWords = 0
		for _, m := range req.Messages {
			promptWords += len(strings.Fields(m.Content))
		}
		text = req.Messages[len(req.Messages)-1].Content
	}
	words := strings.Fields(text)
	var out []request.Chunk
	if think, _ := req.TemplateKwargs["enable_thinking"].(bool); think {
		out = append(out, request.Chunk{Kind: request.ChunkDelta, Reasoning: "thinking"})
	}
	if len(req.Tools) > 0 && req.ToolChoice.Mode != "none" {
		args, _ := json.Marshal(map[string]string{"echo": text})
		out = append(out, request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: "call_0", Name: req.Tools[0].Name, Arguments: string(args)}})
		return append(out, request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishToolCalls,
			Usage: &request.Usage{PromptTokens: promptWords, CompletionTokens: 1}})
	}
	finish := request.FinishStop
	if m := req.Sampling.MaxTokens; m > 0 && len(words) > m {
		words, finish = words[:m], request.FinishLength
	}
	// Stop sequences cut the echo as they cut a model's text, through the
	// runner's matcher.
	stops := output.NewStopMatcher(req.Sampling.Stop)
	n := 0
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		n++
		text, stopped := stops.Push(w)
		if i == len(words)-1 && !stopped {
			text += stops.Flush()
		}
		if text != "" {
			c := request.Chunk{Kind: request.ChunkDelta, Content: text}
			if req.Sampling.Logprobs {
				c.Logprobs = []request.TokenLogprob{{Token: w, Logprob: -float32(i+1) / 4}}
			}
			out = append(out, c)
		}
		if stops.Stopped() {
			break
		}
	}
	done := request.Chunk{Kind: request.ChunkDone, FinishReason: finish,
		Usage: &request.Usage{PromptTokens: promptWords, CompletionTokens: n}}
	if done.StopSequence = stops.Matched(); done.StopSequence != "" {
		done.FinishReason = request.FinishStop
	}
	return append(out, done)
}

func (b *testBackend) Models(ctx context.Context) ([]request.ModelInfo, error) {
	return []request.ModelInfo{{ID: "echo", Created: time.Unix(1700000000, 0)}, {ID: "org/other", OwnedBy: "org"}}, nil
}

// Load: the test backend's models are always ready; keep_alive 0 reports
// an unload.
func (b *testBackend) Load(ctx context.Context, model string, keepAlive *time.Duration) (bool, error) {
	if model != "echo" && model != "org/other" {
		return false, fault.Errorf(fault.ClassNotFound, "model %s has no ready instance", model)
	}
	return keepAlive != nil && *keepAlive == 0, nil
}

func (b *testBackend) State(ctx context.Context) (any, error) {
	return map[string]any{"instances": map[string]any{}, "term": 3}, nil
}

func (b *testBackend) Place(ctx context.Context, req request.PlaceRequest) (request.PlaceResult, error) {
	b.mu.Lock()
	b.lastPlace = req
	b.mu.Unlock()
	switch req.ModelID {
	case "too-big":
		return request.PlaceResult{}, placementRefusal(req)
	case "excluded":
		return request.PlaceResult{}, fmt.Errorf("dry run: %w", excludedRefusal(req))
	case "broken":
		return request.PlaceResult{}, fmt.Errorf("planner: unexpected nil topology at /var/lib/secret")
	}
	return request.PlaceResult{InstanceID: "cmd-0001"}, nil
}

func (b *testBackend) Previews(ctx context.Context, model ids.ModelID) (any, error) {
	return []map[string]any{{"model_id": model, "nodes": 1}}, nil
}

func (b *testBackend) DeleteInstances(ctx context.Context, ref string) ([]ids.InstanceID, error) {
	if ref != "cmd-0001" {
		return nil, fault.Errorf(fault.ClassNotFound, "no instance %q", ref)
	}
	b.mu.Lock()
	b.deleted = append(b.deleted, ids.InstanceID(ref))
	b.mu.Unlock()
	return []ids.InstanceID{ids.InstanceID(ref)}, nil
}

func (b *testBackend) Catalog(ctx context.Context) (any, error) {
	return map[string]any{"models": []map[string]any{{"id": "echo", "placement": "ready"}}}, nil
}

func (b *testBackend) SetTracing(ctx context.Context, enabled bool) error { return nil }

func (b *testBackend) Diagnostics(ctx context.Context) (any, error) {
	return map[string]any{"masterNodeId": "node-a", "term": 1}, nil
}

// fullBackend is a test backend that serves every route family.
type fullBackend interface {
	Inference
	Cluster
	Placement
	Tracing
	Diagnostics
}

// every wires b into every route family, and into the /models routes when
// it manages models.
func every(b fullBackend) Backends {
	bs := Backends{Inference: b, Cluster: b, Placement: b, Tracing: b, Diagnostics: b}
	if m, ok := b.(ModelAdmin); ok {
		bs.Models = m
	}
	return bs
}

// TestBackendsLeftOut: a route family whose backend is nil is not served
// (404); the inference routes still are.
func TestBackendsLeftOut(t *testing.T) {
	srv := httptest.NewServer(New(Config{}, Backends{Inference: newTestBackend(t)}, nil))
	t.Cleanup(srv.Close)
	tests := []struct {
		method, path string
		want         int
	}{
		{"GET", "/v1/models", http.StatusOK},
		{"GET", "/state", http.StatusNotFound},
		{"GET", "/models", http.StatusNotFound},
		{"POST", "/place_instance", http.StatusNotFound},
		{"GET", "/instance/previews?model_id=m", http.StatusNotFound},
		{"DELETE", "/instance/i1", http.StatusNotFound},
		{"POST", "/tracing", http.StatusNotFound},
		{"GET", "/v1/diagnostics/cluster", http.StatusNotFound},
		{"GET", "/models/m", http.StatusNotFound},
		{"GET", "/api/ps", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
