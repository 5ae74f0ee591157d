package node_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape is one parsed GET /metrics, and its text.
type scrape struct {
	families map[string]*dto.MetricFamily
	text     string
}

// get sends GET path to base with key as the bearer key ("" for none).
func get(t *testing.T, base, path, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// scrapeMetrics reads and parses the node's /metrics.
func (n *node) scrapeMetrics() scrape {
	n.t.Helper()
	code, b := n.do("GET", "/metrics", nil)
	if code != 200 {
		n.t.Fatalf("GET /metrics: %d %s", code, b)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		n.t.Fatalf("GET /metrics does not parse as the Prometheus text format: %v\n%s", err, b)
	}
	return scrape{families: mfs, text: string(b)}
}

// value is the sample of name whose labels include want (a histogram's
// sample count), summed over the samples that match.
func (s scrape) value(name string, want map[string]string) (float64, bool) {
	found, sum := false, 0.0
next:
	for _, m := range s.families[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

// labelValues lists every value label takes in the scrape.
func (s scrape) labelValues(label string) map[string]bool {
	out := map[string]bool{}
	for _, mf := range s.families {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// chatUsage is a chat completion's usage.
type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// chat sends a chat completion, streamed (with the usage chunk) or not,
// and returns the usage the answer reported.
func (n *node) chat(stream bool) chatUsage {
	n.t.Helper()
	body := storyRequest(stream, 8)
	if stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	code, b := n.do("POST", "/v1/chat/completions", body)
	if code != 200 {
		n.t.Fatalf("chat (stream %v): %d %s", stream, code, b)
	}
	var doc struct {
		Usage *chatUsage `json:"usage"`
	}
	if !stream {
		if json.Unmarshal(b, &doc) != nil || doc.Usage == nil {
			n.t.Fatalf("chat answer without usage: %s", b)
		}
		return *doc.Usage
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if ok && json.Unmarshal([]byte(data), &doc) == nil && doc.Usage != nil {
			return *doc.Usage
		}
	}
	n.t.Fatalf("stream without a usage chunk: %s", b)
	return chatUsage{}
}

// TestMetrics scrapes /metrics before and after real chat requests,
// streamed and not, and checks that the request counters and histograms
// moved by exactly the requests made and the token counters by the usage
// the answers reported; that labels stay bounded (route patterns, known
// models); and, where promtool is installed, that a real scrape passes
// `promtool check metrics`.
func TestMetrics(t *testing.T) {
	n := startNode(t, t.TempDir())
	inst := n.place()
	n.waitStatus(inst, "ready")

	before := n.scrapeMetrics()
	var want chatUsage
	const requests = 4
	for i := range requests {
		u := n.chat(i%2 == 1)
		if u.CompletionTokens < 2 {
			t.Fatalf("request %d generated %d tokens; the test needs at least 2 for a token gap", i, u.CompletionTokens)
		}
		want.PromptTokens += u.PromptTokens
		want.CompletionTokens += u.CompletionTokens
	}
	// A request for a model nobody has is counted without its made-up name,
	// and a raw path never becomes a label.
	if code, _ := n.do("POST", "/v1/chat/completions", map[string]any{"model": "no-such-model-x1", "messages": []map[string]any{{"role": "user", "content": "hi"}}}); code != 404 {
		t.Fatalf("chat with an unknown model: %d, want 404", code)
	}
	if code, _ := n.do("GET", "/no/such/route-x2", nil); code != 404 {
		t.Fatalf("GET of an unknown route: %d, want 404", code)
	}
	// A request is counted once its handler returns, which a client that
	// has its whole answer may beat by a moment.
	chat := map[string]string{"route": "POST /v1/chat/completions", "model": "stories260k", "code": "200"}
	counted := func(s scrape) float64 {
		v, _ := s.value("skulk_http_requests_total", map[string]string{"route": "POST /v1/chat/completions"})
		return v
	}
	after := n.scrapeMetrics()
	for deadline := time.Now().Add(5 * time.Second); counted(after)-counted(before) < requests+1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		after = n.scrapeMetrics()
	}
	model := map[string]string{"model": "stories260k"}
	moved := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"skulk_http_requests_total", chat, requests},
		{"skulk_http_request_duration_seconds", map[string]string{"route": "POST /v1/chat/completions"}, requests + 1},
		{"skulk_http_requests_total", map[string]string{"route": "POST /v1/chat/completions", "model": "", "code": "404"}, 1},
		{"skulk_http_requests_total", map[string]string{"route": "unmatched", "code": "404"}, 1},
		{"skulk_time_to_first_token_seconds", model, requests},
		{"skulk_prompt_tokens_total", model, float64(want.PromptTokens)},
		{"skulk_generated_tokens_total", model, float64(want.CompletionTokens)},
	}
	for _, m := range moved {
		b, _ := before.value(m.name, m.labels)
		a, ok := after.value(m.name, m.labels)
		if !ok || a-b != m.want {
			t.Errorf("%s%v moved by %v (from %v to %v, found %v), want %v", m.name, m.labels, a-b, b, a, ok, m.want)
		}
	}
	// One gap between consecutive outputs: at most one per token after the
	// first (a few tokens may share an output).
	b, _ := before.value("skulk_inter_token_latency_seconds", model)
	a, _ := after.value("skulk_inter_token_latency_seconds", model)
	if gaps := a - b; gaps < requests || gaps > float64(want.CompletionTokens-requests) {
		t.Errorf("skulk_inter_token_latency_seconds count moved by %v; want between %d and %d", gaps, requests, want.CompletionTokens-requests)
	}
	for label, bad := range map[string]string{"model": "no-such-model-x1", "route": "/no/such/route-x2"} {
		for v := range after.labelValues(label) {
			if strings.Contains(v, strings.Trim(bad, "/")) {
				t.Errorf("label %s=%q comes from the client: labels must stay bounded", label, v)
			}
		}
	}
	readings := []struct {
		name   string
		labels map[string]string
		ok     func(float64) bool
		want   string
	}{
		{"skulk_requests_in_flight", map[string]string{"instance_id": inst, "model": "stories260k"}, func(v float64) bool { return v == 0 }, "0"},
		{"skulk_runner_restarts_total", map[string]string{"instance_id": inst, "rank": "0"}, func(v float64) bool { return v == 0 }, "0"},
		{"skulk_runner_resident_memory_bytes", map[string]string{"instance_id": inst, "rank": "0"}, func(v float64) bool { return v > 1<<20 }, "over 1 MiB"},
		{"skulk_is_master", nil, func(v float64) bool { return v == 1 }, "1"},
		{"skulk_event_log_index", nil, func(v float64) bool { return v > 0 }, "above 0"},
		{"skulk_event_log_term", nil, func(v float64) bool { return v > 0 }, "above 0"},
		{"skulk_gossip_members", nil, func(v float64) bool { return v == 1 }, "1"},
		{"skulk_refused_peers", nil, func(v float64) bool { return v == 0 }, "0"},
		{"skulk_build_info", nil, func(v float64) bool { return v == 1 }, "1"},
		{"process_resident_memory_bytes", nil, func(v float64) bool { return v > 0 }, "above 0"},
	}
	for _, r := range readings {
		if v, ok := after.value(r.name, r.labels); !ok || !r.ok(v) {
			t.Errorf("%s%v = %v (found %v), want %s", r.name, r.labels, v, ok, r.want)
		}
	}

	t.Run("promtool", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool is not installed (Debian: apt-get install prometheus; .ci/run does): the scrape is not checked with `promtool check metrics`")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(after.text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})
}

// TestMetricsAccess: /metrics is a read-only route (admin and inference keys
// both read it, nobody without one once a key is set) unless the node runs
// with --metrics-public, which serves it without a key to every address
// while every other route keeps its keys.
func TestMetricsAccess(t *testing.T) {
	const admin, reader = "metrics-admin-key-1", "metrics-reader-key-2"
	keys := []string{"SKULK_API_KEY=" + admin, "SKULK_INFERENCE_KEYS=reader=" + reader}
	start := func(flags []string, env ...string) *node {
		args := append([]string{"run", "--home", t.TempDir(), "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
			"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1"}, flags...)
		return startArgs(t, args, append(env, keys...))
	}
	keyed := start(nil)
	public := start([]string{"--metrics-public"})
	publicEnv := start(nil, "SKULK_METRICS_PUBLIC=1")
	tests := []struct {
		name   string
		node   *node
		path   string
		key    string
		status int
	}{
		{"no key", keyed, "/metrics", "", 401},
		{"wrong key", keyed, "/metrics", "not-a-key", 401},
		{"admin key", keyed, "/metrics", admin, 200},
		{"inference key", keyed, "/metrics", reader, 200},
		{"public without a key", public, "/metrics", "", 200},
		{"public but other routes keep their keys", public, "/state", "", 401},
		{"public by the environment", publicEnv, "/metrics", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, b := get(t, tt.node.base, tt.path, tt.key); code != tt.status {
				t.Errorf("GET %s: %d %s, want %d", tt.path, code, b, tt.status)
			}
		})
	}
}

// TestMetricsPublicOtherAddress: a node with no key serves clients on other
// addresses nothing, except /metrics with --metrics-public.
func TestMetricsPublicOtherAddress(t *testing.T) {
	ip := nonLoopbackIPv4()
	if ip == "" {
		t.Skip("this machine has no non-loopback IPv4 address to connect from")
	}
	for _, public := range []bool{false, true} {
		args := []string{"run", "--home", t.TempDir(), "--api-addr", ip + ":0", "--gossip-addr", "127.0.0.1:0",
			"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1"}
		want := 403
		if public {
			args, want = append(args, "--metrics-public"), 200
		}
		n := startArgs(t, args, []string{"SKULK_API_KEY=", "SKULK_INFERENCE_KEYS="})
		if code, b := get(t, n.base, "/metrics", ""); code != want {
			t.Errorf("--metrics-public %v: GET /metrics from %s: %d %s, want %d", public, ip, code, b, want)
		}
		if code, _ := get(t, n.base, "/state", ""); code != 403 {
			t.Errorf("--metrics-public %v: GET /state from %s: %d, want 403", public, ip, code)
		}
		n.stop()
	}
}

// nonLoopbackIPv4 is an IPv4 address of this machine that is not loopback,
// or "".
func nonLoopbackIPv4() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	return ""
}
