// Package metrics is a node's Prometheus metrics: a private registry per
// node (never the process-wide default), the counters and histograms the
// node's parts feed as things happen (the API's requests, the gateway's
// tokens, the downloads), and the readings a scrape gathers from the
// functions the node hands in (requests in flight, runners, the log
// position, the membership). The counters live in the node, not in its
// runners, so they survive runner restarts; they start at zero when the
// node starts.
//
// Labels stay bounded: routes are the API's registered patterns, never raw
// paths; models are catalog ids (the node passes "" for anything else);
// instances are the placed ones.
//
// A Metrics is safe for concurrent use. It starts no goroutines. Only the
// node should import this package; the parts it feeds define the small
// interfaces Metrics satisfies.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric of the node's own.
const Namespace = "skulk"

// Bucket bounds, in seconds.
var (
	// requestBuckets spans quick control routes to long generations.
	requestBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	// firstTokenBuckets spans a warm small model to a long prompt's prefill.
	firstTokenBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	// tokenGapBuckets spans a tiny model's decode step to a large one's.
	tokenGapBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
)

// Build names the software a node runs, for skulk_build_info.
type Build struct {
	Version, Commit string
}

// Metrics is one node's metrics.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestSeconds  *prometheus.HistogramVec
	firstToken      *prometheus.HistogramVec
	tokenGap        *prometheus.HistogramVec
	promptTokens    *prometheus.CounterVec
	generatedTokens *prometheus.CounterVec
	cachedTokens    *prometheus.CounterVec
	promptSeconds   *prometheus.CounterVec
	decodeSeconds   *prometheus.CounterVec
	downloadBytes   *prometheus.CounterVec
	downloadFails   *prometheus.CounterVec
}

// New returns a node's metrics on a registry of their own, with the Go
// runtime's and the process's standard collectors.
func New(b Build) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
		Help: "HTTP requests answered, by route pattern, model (a catalog id, or empty) and status code."}, []string{"route", "model", "code"})
	m.requestSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
		Help: "Time from a request's arrival to the end of its answer (a stream's last event), by route pattern.", Buckets: requestBuckets}, []string{"route"})
	m.firstToken = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "time_to_first_token_seconds",
		Help: "Time from a generation's hand-over to its first output (text or tool call), streamed or not, by model.", Buckets: firstTokenBuckets}, []string{"model"})
	m.tokenGap = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "inter_token_latency_seconds",
		Help: "Time between consecutive outputs of a generation (one token each, or a few when text is held back for stop sequences), by model.", Buckets: tokenGapBuckets}, []string{"model"})
	m.promptTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "prompt_tokens_total",
		Help: "Prompt tokens of the generations and embeddings this node's API answered, from their final usage, by model."}, []string{"model"})
	m.generatedTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "generated_tokens_total",
		Help: "Tokens generated for this node's API, from the final usage, by model."}, []string{"model"})
	m.cachedTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "cached_prompt_tokens_total",
		Help: "Prompt tokens a runner's prefix cache served instead of evaluating them (counted in prompt_tokens_total too), by model."}, []string{"model"})
	m.promptSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "prompt_eval_seconds_total",
		Help: "Time runners spent reading the prompts of this node's generations (their timings' prompt_ms), by model."}, []string{"model"})
	m.decodeSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "decode_seconds_total",
		Help: "Time runners spent generating, from each generation's first token to its last (their timings' predicted_ms), by model."}, []string{"model"})
	m.downloadBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "model_download_bytes_total",
		Help: "Bytes of model weights this node downloaded, by model."}, []string{"model"})
	m.downloadFails = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "model_download_failures_total",
		Help: "Model downloads on this node that failed (not those cancelled), by model."}, []string{"model"})
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info",
		Help: "Always 1; the labels name the software the node runs.", ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit}})
	info.Set(1)
	m.reg.MustRegister(m.requests, m.requestSeconds, m.firstToken, m.tokenGap, m.promptTokens, m.generatedTokens,
		m.cachedTokens, m.promptSeconds, m.decodeSeconds, m.downloadBytes, m.downloadFails, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text (or negotiated)
// exposition format. A reading that fails is left out and the rest served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Request counts an answered HTTP request.
func (m *Metrics) Request(route, model string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, model, strconv.Itoa(code)).Inc()
	m.requestSeconds.WithLabelValues(route).Observe(d.Seconds())
}

// FirstToken observes the wait for a generation's first output.
func (m *Metrics) FirstToken(model string, d time.Duration) {
	m.firstToken.WithLabelValues(model).Observe(d.Seconds())
}

// TokenGap observes the time between two consecutive outputs.
func (m *Metrics) TokenGap(model string, d time.Duration) {
	m.tokenGap.WithLabelValues(model).Observe(d.Seconds())
}

// Tokens counts a finished task's usage.
func (m *Metrics) Tokens(model string, prompt, generated int) {
	if prompt > 0 {
		m.promptTokens.WithLabelValues(model).Add(float64(prompt))
	}
	if generated > 0 {
		m.generatedTokens.WithLabelValues(model).Add(float64(generated))
	}
}

// Timings counts a finished generation's timings: prompt tokens served
// from the prefix cache, and the runner's prompt and decode times.
func (m *Metrics) Timings(model string, cached int, prompt, decode time.Duration) {
	m.cachedTokens.WithLabelValues(model).Add(float64(max(cached, 0)))
	m.promptSeconds.WithLabelValues(model).Add(max(prompt, 0).Seconds())
	m.decodeSeconds.WithLabelValues(model).Add(max(decode, 0).Seconds())
}

// DownloadBytes counts n bytes of model weights downloaded.
func (m *Metrics) DownloadBytes(model string, n int64) {
	if n > 0 {
		m.downloadBytes.WithLabelValues(model).Add(float64(n))
	}
}

// DownloadFailed counts a failed download.
func (m *Metrics) DownloadFailed(model string) {
	m.downloadFails.WithLabelValues(model).Inc()
}

// Readings are what a scrape reads from the node at that moment. Every
// function may be nil (its metrics are left out) and must return promptly.
type Readings struct {
	// Position is this node's event-log index and term and whether it is
	// the master.
	Position func() (index, term uint64, master bool)
	// Members is the number of live gossip members, this node included.
	Members func() int
	// Refused is the number of peers refused lately (another cluster key
	// or network version).
	Refused func() int
	// Instances are the placed instances with this node's requests in
	// flight on each.
	Instances func() []Instance
	// Runners are this node's runners (one per instance rank placed here).
	Runners func() []Runner
}

// Instance is one placed instance as this node's gateway sees it.
type Instance struct {
	ID, Model string
	InFlight  int
}

// Runner is one rank's runner on this node, across its restarts.
type Runner struct {
	Instance, Model string
	Rank            int
	Restarts        int   // relaunches after a failure
	ResidentBytes   int64 // the process's resident memory; 0 when unknown (no process, or not Linux)
}

// Watch registers the readings a scrape gathers. Call it once.
func (m *Metrics) Watch(r Readings) {
	m.reg.MustRegister(newReader(r))
}

// reader gathers Readings at each scrape.
type reader struct {
	r                                     Readings
	index, term, master, members, refused *prometheus.Desc
	inflight, restarts, rss               *prometheus.Desc
}

func newReader(r Readings) *reader {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
	}
	return &reader{r: r,
		index:    d("event_log_index", "Index of the last control-plane event this node applied."),
		term:     d("event_log_term", "Term of the control plane as this node knows it."),
		master:   d("is_master", "1 when this node is the elected master, else 0."),
		members:  d("gossip_members", "Live members of the gossip membership, this node included."),
		refused:  d("refused_peers", "Peers refused lately for another cluster key or network version (see GET /v1/diagnostics/cluster)."),
		inflight: d("requests_in_flight", "This node's API requests in flight on each placed instance.", "instance_id", "model"),
		restarts: d("runner_restarts_total", "Relaunches of an instance rank's runner on this node after a failure.", "instance_id", "model", "rank"),
		rss:      d("runner_resident_memory_bytes", "Resident memory of an instance rank's runner process on this node.", "instance_id", "model", "rank"),
	}
}

func (c *reader) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.index, c.term, c.master, c.members, c.refused, c.inflight, c.restarts, c.rss} {
		ch <- d
	}
}

func (c *reader) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if f := c.r.Position; f != nil {
		index, term, master := f()
		gauge(c.index, float64(index))
		gauge(c.term, float64(term))
		gauge(c.master, boolValue(master))
	}
	if f := c.r.Members; f != nil {
		gauge(c.members, float64(f()))
	}
	if f := c.r.Refused; f != nil {
		gauge(c.refused, float64(f()))
	}
	if f := c.r.Instances; f != nil {
		for _, in := range f() {
			gauge(c.inflight, float64(in.InFlight), in.ID, in.Model)
		}
	}
	if f := c.r.Runners; f != nil {
		for _, r := range f() {
			rank := strconv.Itoa(r.Rank)
			ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(r.Restarts), r.Instance, r.Model, rank)
			if r.ResidentBytes > 0 {
				gauge(c.rss, float64(r.ResidentBytes), r.Instance, r.Model, rank)
			}
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
