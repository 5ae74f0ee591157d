package api

import (
	"net/http"
	"slices"
	"sync"
	"testing"
)

// TestObserve checks what Config.Observe hears of each request: the
// route's registered pattern (never the raw path), the model the request
// named once it reached the Backend, and the status, for every wire
// format and for requests refused before any route runs.
func TestObserve(t *testing.T) {
	var mu sync.Mutex
	var heard []Served
	cfg := Config{Observe: func(s Served) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, s)
	}}
	tests := []struct {
		name         string
		key          string // the fixture's API key
		method, path string
		body         string
		route, model string
		status       int
	}{
		{"chat", "", "POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`, "POST /v1/chat/completions", "echo", 200},
		{"streamed chat", "", "POST", "/v1/chat/completions", `{"model":"echo","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "POST /v1/chat/completions", "echo", 200},
		{"unknown model", "", "POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, "POST /v1/chat/completions", "nope", 404},
		{"undecodable body", "", "POST", "/v1/chat/completions", `{`, "POST /v1/chat/completions", "", 400},
		{"anthropic", "", "POST", "/v1/messages", `{"model":"echo","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, "POST /v1/messages", "echo", 200},
		{"ollama", "", "POST", "/api/chat", `{"model":"echo","stream":false,"messages":[{"role":"user","content":"hi"}]}`, "POST /api/chat", "echo", 200},
		{"path value", "", "DELETE", "/instance/abc123", "", "DELETE /instance/{id...}", "", 404},
		{"no route", "", "GET", "/no/such/path", "", "", "", 404},
		{"refused before routing", "k", "GET", "/state", "", "GET /state", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			heard = nil
			mu.Unlock()
			c := cfg
			c.APIKey = tt.key
			f := newFixture(t, c)
			f.key = "" // the refused case sends none
			r := f.do(t, tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, r.status, r.body, tt.status)
			}
			mu.Lock()
			got := slices.Clone(heard)
			mu.Unlock()
			if len(got) != 1 || got[0].Route != tt.route || got[0].Model != tt.model || got[0].Status != tt.status {
				t.Fatalf("heard %+v, want one request of route %q, model %q, status %d", got, tt.route, tt.model, tt.status)
			}
		})
	}
}

// TestMetricsRoute: GET /metrics serves Config.Metrics as a read-only
// route (a key is needed once one is set, and an inference key would do),
// with MetricsPublic to anyone, and is absent without Config.Metrics.
func TestMetricsRoute(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("skulk_up 1\n")) })
	tests := []struct {
		name      string
		cfg       Config
		sendKey   bool
		status    int
		stateCode int // GET /state without a key, for comparison
	}{
		{"no metrics handler", Config{}, false, 404, 200},
		{"keyed without a key", Config{Metrics: metrics, APIKey: "k"}, false, 401, 401},
		{"keyed with the key", Config{Metrics: metrics, APIKey: "k"}, true, 200, 401},
		{"public", Config{Metrics: metrics, APIKey: "k", MetricsPublic: true}, false, 200, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.cfg)
			if !tt.sendKey {
				f.key = ""
			}
			if r := f.do(t, "GET", "/metrics", ""); r.status != tt.status {
				t.Errorf("GET /metrics: %d %s, want %d", r.status, r.body, tt.status)
			}
			f.key = ""
			if r := f.do(t, "GET", "/state", ""); r.status != tt.stateCode {
				t.Errorf("GET /state without a key: %d, want %d", r.status, tt.stateCode)
			}
		})
	}
}
