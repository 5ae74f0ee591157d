package node_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

type traceDoc struct {
	TraceID string `json:"trace_id"`
	Spans   []struct {
		Name       string            `json:"name"`
		Node       string            `json:"node"`
		SpanID     string            `json:"span_id"`
		Parent     string            `json:"parent"`
		Start      time.Time         `json:"start"`
		DurationMS float64           `json:"duration_ms"`
		Attrs      map[string]string `json:"attributes"`
	} `json:"spans"`
}

// streamTimed sends one streaming chat request and reads it to [DONE],
// returning its trace id and the client's wall time.
func (n *node) streamTimed(t *testing.T, body map[string]any) (string, time.Duration) {
	t.Helper()
	b, _ := json.Marshal(body)
	start := time.Now()
	resp, err := http.Post(n.base+"/v1/chat/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("chat: %d %s", resp.StatusCode, b)
	}
	res := readSSE(resp.Body, nil)
	took := time.Since(start)
	if !res.done || res.chunks < 10 {
		t.Fatalf("stream ended early: %+v", res)
	}
	id := resp.Header.Get("X-Skulk-Trace")
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("X-Skulk-Trace %q", id)
	}
	return id, took
}

// TestTraceAcrossNodes: with tracing on, a streaming chat the API node hands
// to the instance on the other node leaves a trace at the API node with the
// spans of both nodes, nested and ordered, whose root span is the client's
// time; the OTLP form carries the same spans. With tracing off the answer
// still carries its id, and no trace is kept.
func TestTraceAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	a, b := clusterPair(t)
	aID, bID := nodeID(a.home), nodeID(b.home)

	code, body := a.do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "excluded_nodes": []string{aID}})
	if code != 200 {
		t.Fatalf("place: %d %s", code, body)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(body, &placed)
	a.waitStatus(placed.InstanceID, "ready")

	req := storyRequest(true, 200)
	// Tracing off: an id, no trace.
	offID, _ := a.streamTimed(t, req)
	time.Sleep(100 * time.Millisecond)
	if code, body := a.do("GET", "/v1/traces/"+offID, nil); code != 404 {
		t.Fatalf("a trace kept with tracing off: %d %s", code, body)
	}

	if code, body := a.do("POST", "/tracing", map[string]any{"enabled": true}); code != 200 {
		t.Fatalf("POST /tracing: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := a.do("GET", "/state", nil)
		var st struct {
			Tracing bool `json:"tracing"`
		}
		json.Unmarshal(body, &st)
		if st.Tracing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tracing flag never reached the API node")
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.streamTimed(t, req) // warm
	id, took := a.streamTimed(t, req)

	// The trace is kept once the handler returns, just after [DONE].
	var doc traceDoc
	for deadline := time.Now().Add(5 * time.Second); ; {
		code, body = a.do("GET", "/v1/traces/"+id, nil)
		if code == 200 {
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/traces/%s: %d %s", id, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("client %v; trace %s", took, body)
	if doc.TraceID != id {
		t.Fatalf("trace_id %s, want %s", doc.TraceID, id)
	}
	type sp = struct {
		node       string
		id, parent string
		start, end time.Time
		dur        time.Duration
	}
	spans := map[string]sp{}
	for i, s := range doc.Spans {
		if i > 0 && s.Start.Before(doc.Spans[i-1].Start) {
			t.Errorf("span %s starts before the span listed ahead of it", s.Name)
		}
		d := time.Duration(s.DurationMS * float64(time.Millisecond))
		spans[s.Name] = sp{s.Node, s.SpanID, s.Parent, s.Start, s.Start.Add(d), d}
	}
	for name, node := range map[string]string{"api": aID, "api.decode": aID, "gateway.pick": aID, "deliver": aID, "stream.write": aID,
		"worker.serve": bID, "prefill": bID, "decode": bID} {
		if s, ok := spans[name]; !ok || s.node != node {
			t.Fatalf("span %s on %q, want it on %s (a %s, b %s)", name, s.node, node, aID, bID)
		}
	}
	api, deliver, serve, prefill, decode := spans["api"], spans["deliver"], spans["worker.serve"], spans["prefill"], spans["decode"]
	// Parents: the API's steps under api, the other node's under deliver.
	for _, name := range []string{"api.decode", "gateway.pick", "deliver", "stream.write"} {
		if spans[name].parent != api.id {
			t.Errorf("%s's parent %s, want api %s", name, spans[name].parent, api.id)
		}
	}
	if api.parent != "" || serve.parent != deliver.id || prefill.parent != serve.id || decode.parent != serve.id {
		t.Errorf("parents: api %q, worker.serve %q (deliver %s), prefill %q decode %q (worker.serve %s)",
			api.parent, serve.parent, deliver.id, prefill.parent, decode.parent, serve.id)
	}
	// Order (one clock on loopback): api ⊇ deliver → worker.serve ⊇
	// prefill → decode, and worker.serve within api.
	// duration_ms is a float: allow a microsecond of rounding.
	const eps = time.Microsecond
	before := func(a, b time.Time) bool { return !a.After(b.Add(eps)) }
	within := func(in, out sp) bool { return before(out.start, in.start) && before(in.end, out.end) }
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"deliver within api", within(deliver, api)}, {"worker.serve within api", within(serve, api)},
		{"deliver starts before worker.serve", before(deliver.start, serve.start)},
		{"prefill within worker.serve", within(prefill, serve)}, {"decode within worker.serve", within(decode, serve)},
		{"prefill ends before decode starts", before(prefill.end, decode.start)},
	} {
		if !c.ok {
			t.Errorf("spans out of order: not %s", c.what)
		}
	}
	// The root span is the client's time, within 10%; the steps in
	// sequence (decode the body, pick, deliver, run on the other node)
	// add up to it.
	// (A request of this tiny model takes some 30 ms: on a loaded 2-core
	// machine one descheduling of the writer draining the last chunks is
	// 10% of it, so ten milliseconds of slack stand beside the 10%.)
	slack := func(d time.Duration) time.Duration { return max(d/10, 10*time.Millisecond) }
	if diff := took - api.dur; diff < 0 || diff > slack(took) {
		t.Errorf("api span %v, client %v: more than 10%% apart", api.dur, took)
	}
	steps := spans["api.decode"].dur + spans["gateway.pick"].dur + deliver.dur + serve.dur
	if diff := api.dur - steps; diff < 0 || diff > slack(api.dur) {
		t.Errorf("api.decode %v + gateway.pick %v + deliver %v + worker.serve %v = %v, api %v: more than 10%% apart",
			spans["api.decode"].dur, spans["gateway.pick"].dur, deliver.dur, serve.dur, steps, api.dur)
	}

	// OTLP: a resource per node, the trace's id, every span.
	code, body = a.do("GET", "/v1/traces/"+id+"?format=otlp", nil)
	var otlp struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID, SpanID, ParentSpanID, Name string
				}
			}
		}
	}
	if err := json.Unmarshal(body, &otlp); code != 200 || err != nil || len(otlp.ResourceSpans) != 2 {
		t.Fatalf("otlp: %d %s", code, body)
	}
	n := 0
	for _, rs := range otlp.ResourceSpans {
		for _, s := range rs.ScopeSpans[0].Spans {
			n++
			if s.TraceID != id || len(s.SpanID) != 16 {
				t.Errorf("otlp span %+v", s)
			}
		}
	}
	if n != len(doc.Spans) {
		t.Errorf("otlp has %d spans, the trace %d", n, len(doc.Spans))
	}
	if code, body := a.do("GET", "/v1/traces/"+id+"?format=zipkin", nil); code != 400 || !strings.Contains(string(body), "otlp") {
		t.Errorf("an unknown format: %d %s", code, body)
	}
}

// clusterPair starts two loopback nodes that form one cluster.
func clusterPair(t *testing.T) (*clusterNode, *clusterNode) {
	t.Helper()
	n := loopbackCluster(t, 2)
	return n[0], n[1]
}

// TestTraceOfSplitRequest: a traced request to a model split across two
// nodes holds a span of each rank, on the node that ran it, within the
// first rank's worker.serve, with what the rank did.
func TestTraceOfSplitRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	a, _ := clusterPair(t)

	code, body := a.do("POST", "/place_instance", map[string]any{"model_id": "stories260k", "min_nodes": 2})
	if code != 200 {
		t.Fatalf("place: %d %s", code, body)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(body, &placed)
	a.waitStatus(placed.InstanceID, "ready")
	_, body = a.do("GET", "/state", nil)
	var st struct {
		Instances map[string]struct {
			Placement []struct {
				Node string `json:"node"`
			} `json:"placement"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	ranks := st.Instances[placed.InstanceID].Placement
	if len(ranks) != 2 || ranks[0].Node == ranks[1].Node {
		t.Fatalf("placement %+v, want two nodes", ranks)
	}

	if code, body := a.do("POST", "/tracing", map[string]any{"enabled": true}); code != 200 {
		t.Fatalf("POST /tracing: %d %s", code, body)
	}
	var doc traceDoc
	for deadline := time.Now().Add(10 * time.Second); ; {
		id, _ := a.streamTimed(t, storyRequest(true, 24))
		time.Sleep(50 * time.Millisecond)
		if code, body = a.do("GET", "/v1/traces/"+id, nil); code == 200 {
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no trace kept 10 s after tracing was turned on: %d %s", code, body)
		}
	}
	t.Logf("trace %s", body)
	type sp struct {
		node, id, parent string
		start, end       time.Time
		attrs            map[string]string
	}
	spans := map[string]sp{}
	for _, s := range doc.Spans {
		spans[s.Name] = sp{s.Node, s.SpanID, s.Parent, s.Start, s.Start.Add(time.Duration(s.DurationMS * float64(time.Millisecond))), s.Attrs}
	}
	serve, ok := spans["worker.serve"]
	if !ok || serve.node != ranks[0].Node {
		t.Fatalf("worker.serve on %q, want rank 0's node %s", serve.node, ranks[0].Node)
	}
	const eps = time.Microsecond
	for i, r := range ranks {
		s, ok := spans[fmt.Sprintf("rank %d", i)]
		if !ok || s.node != r.Node || s.parent != serve.id {
			t.Fatalf("rank %d's span %+v, want it on %s under worker.serve %s", i, s, r.Node, serve.id)
		}
		// One clock on loopback: the rank's part lies within the task.
		if s.start.Before(serve.start.Add(-eps)) || s.end.After(serve.end.Add(eps)) {
			t.Errorf("rank %d's span %v–%v outside worker.serve %v–%v", i, s.start, s.end, serve.start, serve.end)
		}
		if s.attrs["prefill_rows"] == "" || s.attrs["prefill_rows"] == "0" || s.attrs["decode_steps"] == "" || s.attrs["decode_steps"] == "0" {
			t.Errorf("rank %d's span attributes %v", i, s.attrs)
		}
	}
}
