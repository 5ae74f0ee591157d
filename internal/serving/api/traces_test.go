package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/serving/request"
)

// tracingBackend is the test backend as the gateway is with the cluster's
// tracing on: it starts the request's trace and records a span in it.
type tracingBackend struct{ *testBackend }

func (b tracingBackend) Generate(ctx context.Context, req request.Request) (<-chan request.Chunk, error) {
	if rec := trace.Begin(ctx, "owner"); rec != nil {
		now := timeNow()
		rec.Add("gateway.pick", 0, rec.Root(), now, now)
	}
	return b.testBackend.Generate(ctx, req)
}

// TestTraceHeader: every answer carries a fresh trace id, the refused and
// the unrouted ones too.
func TestTraceHeader(t *testing.T) {
	f := newFixture(t, Config{APIKey: "k", Traces: trace.NewStore(0, 0, nil)})
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for _, key := range []string{"k", ""} {
		f.key = key
		for _, path := range []string{"/state", "/no/such/path", "/v1/traces/0123456789abcdef0123456789abcdef"} {
			r := f.do(t, "GET", path, "")
			id := r.header.Get(trace.IDHeader)
			if !hex32.MatchString(id) || seen[id] {
				t.Fatalf("GET %s (%d): %s %q", path, r.status, trace.IDHeader, id)
			}
			seen[id] = true
		}
	}
}

// TestTraceRoute: a traced request leaves its trace, with the API's spans
// around the backend's, at GET /v1/traces/{id}; an untraced one leaves
// none; the OTLP form and a wrong format are answered.
func TestTraceRoute(t *testing.T) {
	store := trace.NewStore(0, 0, nil)
	cfg := Config{Traces: store}
	b := newTestBackend(t)
	srv := httptest.NewServer(New(cfg, every(tracingBackend{b}), nil))
	defer srv.Close()
	f := &fixture{url: srv.URL, b: b}

	r := f.do(t, "POST", "/v1/chat/completions", `{"model":"echo","stream":true,"messages":[{"role":"user","content":"one two three"}]}`)
	id := r.header.Get(trace.IDHeader)
	if r.status != 200 || id == "" {
		t.Fatalf("chat: %d %q", r.status, id)
	}
	r = f.do(t, "GET", "/v1/traces/"+id, "")
	var doc trace.Document
	if err := json.Unmarshal(r.body, &doc); r.status != 200 || err != nil || doc.TraceID != id {
		t.Fatalf("GET trace: %d %s", r.status, r.body)
	}
	names := map[string]trace.DocSpan{}
	for _, s := range doc.Spans {
		names[s.Name] = s
	}
	root := names["api"]
	for _, n := range []string{"api.decode", "gateway.pick", "stream.write"} {
		if s, ok := names[n]; !ok || s.Parent != root.SpanID || s.Node != "owner" {
			t.Errorf("span %s: %+v (api %+v)", n, s, root)
		}
	}
	if doc.Spans[0].Name != "api" || root.Attrs["route"] != "POST /v1/chat/completions" {
		t.Errorf("spans %+v", doc.Spans)
	}
	if r := f.do(t, "GET", "/v1/traces/"+id+"?format=otlp", ""); r.status != 200 || !regexp.MustCompile(`"traceId":"`+id+`"`).Match(r.body) {
		t.Errorf("otlp: %d %s", r.status, r.body)
	}
	if r := f.do(t, "GET", "/v1/traces/"+id+"?format=xml", ""); r.status != 400 {
		t.Errorf("format=xml: %d %s", r.status, r.body)
	}
	// A request the backend does not trace (the cluster's tracing off).
	plain := newFixture(t, cfg)
	r = plain.do(t, "POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`)
	if r := f.do(t, "GET", "/v1/traces/"+r.header.Get(trace.IDHeader), ""); r.status != 404 {
		t.Errorf("an untraced request's trace: %d %s", r.status, r.body)
	}
	if store.Len() != 1 {
		t.Errorf("the store holds %d traces, want 1", store.Len())
	}
}

var timeNow = time.Now

// TestTraceByPrefix: a trace goes by the unique start of its id; a start
// that several share is refused naming them.
func TestTraceByPrefix(t *testing.T) {
	store := trace.NewStore(0, 0, nil)
	a, b := "abcd0000000000000000000000000001", "abcd1000000000000000000000000002"
	store.Put(a, []trace.Span{{Name: "api", Node: "n"}})
	store.Put(b, []trace.Span{{Name: "api", Node: "n"}})
	f := newFixture(t, Config{Traces: store})
	for _, c := range []struct {
		ref    string
		status int
		want   string
	}{
		{"abcd0", 200, `"trace_id":"` + a + `"`},
		{"abcd1", 200, `"trace_id":"` + b + `"`},
		{a, 200, `"trace_id":"` + a + `"`},
		{"abcd", 409, a + ", " + b},
		{"ffff", 404, "holds no trace"},
	} {
		if r := f.do(t, "GET", "/v1/traces/"+c.ref, ""); r.status != c.status || !strings.Contains(string(r.body), c.want) {
			t.Errorf("GET /v1/traces/%s: %d %s, want %d with %q", c.ref, r.status, r.body, c.status, c.want)
		}
	}
}
