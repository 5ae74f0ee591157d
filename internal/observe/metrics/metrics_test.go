package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape serves GET /metrics from h and parses the text format.
func scrape(t *testing.T, h http.Handler) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, body)
	}
	return mfs, body
}

// value finds the sample of family name whose labels include want; count
// is a histogram's sample count.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, ok bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestScrape feeds every metric, scrapes, and checks each value and that
// the exposition passes the linter `promtool check metrics` runs.
func TestScrape(t *testing.T) {
	m := New(Build{Version: "1.2.3", Commit: "abc"})
	m.Request("POST /v1/chat/completions", "stories260k", 200, 30*time.Millisecond)
	m.Request("POST /v1/chat/completions", "stories260k", 200, 40*time.Millisecond)
	m.Request("unmatched", "", 404, time.Millisecond)
	m.FirstToken("stories260k", 20*time.Millisecond)
	m.TokenGap("stories260k", time.Millisecond)
	m.TokenGap("stories260k", 2*time.Millisecond)
	m.Tokens("stories260k", 5, 64)
	m.Tokens("stories260k", 5, 0)
	m.Timings("stories260k", 3, 250*time.Millisecond, 1500*time.Millisecond)
	m.Timings("stories260k", 1, 250*time.Millisecond, 500*time.Millisecond)
	m.DownloadBytes("qwen", 1000)
	m.DownloadBytes("qwen", 24)
	m.DownloadFailed("qwen")
	m.Watch(Readings{
		Position: func() (uint64, uint64, bool) { return 42, 3, true },
		Members:  func() int { return 2 },
		Refused:  func() int { return 1 },
		Instances: func() []Instance {
			return []Instance{{ID: "inst-a", Model: "stories260k", InFlight: 2}, {ID: "inst-b", Model: "qwen"}}
		},
		Runners: func() []Runner {
			return []Runner{{Instance: "inst-a", Model: "stories260k", Rank: 0, Restarts: 1, ResidentBytes: 64 << 20},
				{Instance: "inst-b", Model: "qwen", Rank: 0}}
		},
	})
	mfs, body := scrape(t, m.Handler())
	chat := map[string]string{"route": "POST /v1/chat/completions", "model": "stories260k", "code": "200"}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"skulk_http_requests_total", chat, 2},
		{"skulk_http_requests_total", map[string]string{"route": "unmatched", "model": "", "code": "404"}, 1},
		{"skulk_http_request_duration_seconds", map[string]string{"route": "POST /v1/chat/completions"}, 2},
		{"skulk_time_to_first_token_seconds", map[string]string{"model": "stories260k"}, 1},
		{"skulk_cached_prompt_tokens_total", map[string]string{"model": "stories260k"}, 4},
		{"skulk_prompt_eval_seconds_total", map[string]string{"model": "stories260k"}, 0.5},
		{"skulk_decode_seconds_total", map[string]string{"model": "stories260k"}, 2},
		{"skulk_inter_token_latency_seconds", map[string]string{"model": "stories260k"}, 2},
		{"skulk_prompt_tokens_total", map[string]string{"model": "stories260k"}, 10},
		{"skulk_generated_tokens_total", map[string]string{"model": "stories260k"}, 64},
		{"skulk_model_download_bytes_total", map[string]string{"model": "qwen"}, 1024},
		{"skulk_model_download_failures_total", map[string]string{"model": "qwen"}, 1},
		{"skulk_build_info", map[string]string{"version": "1.2.3", "commit": "abc"}, 1},
		{"skulk_event_log_index", nil, 42},
		{"skulk_event_log_term", nil, 3},
		{"skulk_is_master", nil, 1},
		{"skulk_gossip_members", nil, 2},
		{"skulk_refused_peers", nil, 1},
		{"skulk_requests_in_flight", map[string]string{"instance_id": "inst-a", "model": "stories260k"}, 2},
		{"skulk_requests_in_flight", map[string]string{"instance_id": "inst-b", "model": "qwen"}, 0},
		{"skulk_runner_restarts_total", map[string]string{"instance_id": "inst-a", "rank": "0"}, 1},
		{"skulk_runner_restarts_total", map[string]string{"instance_id": "inst-b", "rank": "0"}, 0},
	}
	for _, tt := range tests {
		if v, ok := value(mfs, tt.name, tt.labels); !ok || v != tt.want {
			t.Errorf("%s%v = %v (found %v), want %v", tt.name, tt.labels, v, ok, tt.want)
		}
	}
	if _, ok := value(mfs, "process_resident_memory_bytes", nil); !ok {
		t.Error("no process_resident_memory_bytes: the process collector is missing")
	}
	if rss, ok := value(mfs, "skulk_runner_resident_memory_bytes", map[string]string{"instance_id": "inst-a"}); !ok || rss != 64<<20 {
		t.Errorf("resident memory of a runner: %v (found %v), want 64 MiB", rss, ok)
	}
	if _, ok := value(mfs, "skulk_runner_resident_memory_bytes", map[string]string{"instance_id": "inst-b"}); ok {
		t.Error("a runner whose memory is unknown has a resident memory")
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestReadingsLeftOut checks that a node without readings (nil functions)
// still serves its counters.
func TestReadingsLeftOut(t *testing.T) {
	m := New(Build{})
	m.Watch(Readings{})
	m.Request("GET /state", "", 200, time.Millisecond)
	mfs, _ := scrape(t, m.Handler())
	if _, ok := mfs["skulk_event_log_index"]; ok {
		t.Error("skulk_event_log_index served without a Position reading")
	}
	if v, ok := value(mfs, "skulk_http_requests_total", map[string]string{"route": "GET /state"}); !ok || v != 1 {
		t.Errorf("skulk_http_requests_total = %v (found %v), want 1", v, ok)
	}
}
