package trace

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Default bounds of a Store.
const (
	DefaultCapacity = 1000
	DefaultMaxAge   = time.Hour
)

// Store keeps a node's latest finished traces: at most Capacity of them
// (the oldest go first) and none older than MaxAge. It is safe for
// concurrent use.
type Store struct {
	capacity int
	maxAge   time.Duration
	now      func() time.Time

	mu    sync.Mutex
	ring  []Trace // in arrival order from head, len <= capacity
	head  int     // the oldest entry once the ring is full
	index map[string]int
}

// NewStore returns a store of capacity traces kept at most maxAge (0 for
// either: the default), timed by now (nil: the wall clock).
func NewStore(capacity int, maxAge time.Duration, now func() time.Time) *Store {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if now == nil {
		now = time.Now
	}
	return &Store{capacity: capacity, maxAge: maxAge, now: now, index: map[string]int{}}
}

// Put keeps the spans of trace id, replacing the oldest trace when the
// store is full.
func (s *Store) Put(id string, spans []Span) {
	t := Trace{ID: id, At: s.now(), Spans: spans}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[id]; ok { // the same id again: the newer wins
		s.ring[i] = t
		return
	}
	if len(s.ring) < s.capacity {
		s.index[id] = len(s.ring)
		s.ring = append(s.ring, t)
		return
	}
	delete(s.index, s.ring[s.head].ID)
	s.ring[s.head] = t
	s.index[id] = s.head
	s.head = (s.head + 1) % s.capacity
}

// Get returns trace id with its spans ordered by start, or false when the
// store does not hold it (never did, dropped for room, or too old).
func (s *Store) Get(id string) (Trace, bool) {
	s.mu.Lock()
	i, ok := s.index[id]
	var t Trace
	if ok {
		t = s.ring[i]
	}
	s.mu.Unlock()
	if !ok || s.now().Sub(t.At) > s.maxAge {
		return Trace{}, false
	}
	t.Spans = slices.Clone(t.Spans)
	slices.SortStableFunc(t.Spans, func(a, b Span) int { return a.Start.Compare(b.Start) })
	return t, true
}

// Matching returns the ids of the traces the store holds that start with
// prefix (a whole id too), sorted, the too old left out; at most limit
// of them.
func (s *Store) Matching(prefix string, limit int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, t := range s.ring {
		if strings.HasPrefix(t.ID, prefix) && s.now().Sub(t.At) <= s.maxAge {
			out = append(out, t.ID)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)]
}

// Len reports how many traces the store holds, the too old included.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ring)
}

// Document is the GET /v1/traces/{id} answer.
type Document struct {
	TraceID string    `json:"trace_id"`
	Spans   []DocSpan `json:"spans"`
}

// DocSpan is one span of a Document.
type DocSpan struct {
	Name       string            `json:"name"`
	Node       string            `json:"node"`
	SpanID     SpanID            `json:"span_id"`
	Parent     SpanID            `json:"parent,omitempty"`
	Start      time.Time         `json:"start"`
	DurationMS float64           `json:"duration_ms"`
	Attrs      map[string]string `json:"attributes,omitempty"`
}

// Document returns the trace as GET /v1/traces/{id} answers it.
func (t Trace) Document() Document {
	d := Document{TraceID: t.ID, Spans: make([]DocSpan, 0, len(t.Spans))}
	for _, sp := range t.Spans {
		ds := DocSpan{Name: sp.Name, Node: sp.Node, SpanID: sp.ID, Parent: sp.Parent, Start: sp.Start,
			DurationMS: float64(sp.Duration) / float64(time.Millisecond)}
		if len(sp.Attrs) > 0 {
			ds.Attrs = make(map[string]string, len(sp.Attrs))
			for _, a := range sp.Attrs {
				ds.Attrs[a.Key] = a.Value
			}
		}
		d.Spans = append(d.Spans, ds)
	}
	return d
}

// OTLP JSON (the OpenTelemetry protocol's JSON encoding of an
// ExportTraceServiceRequest), which Jaeger and Tempo import: one resource
// per node, its spans in one scope.
type (
	OTLPDocument struct {
		ResourceSpans []OTLPResourceSpans `json:"resourceSpans"`
	}
	OTLPResourceSpans struct {
		Resource   OTLPResource     `json:"resource"`
		ScopeSpans []OTLPScopeSpans `json:"scopeSpans"`
	}
	OTLPResource struct {
		Attributes []OTLPKeyValue `json:"attributes"`
	}
	OTLPScopeSpans struct {
		Scope OTLPScope  `json:"scope"`
		Spans []OTLPSpan `json:"spans"`
	}
	OTLPScope struct {
		Name string `json:"name"`
	}
	OTLPSpan struct {
		TraceID      string `json:"traceId"`
		SpanID       string `json:"spanId"`
		ParentSpanID string `json:"parentSpanId,omitempty"`
		Name         string `json:"name"`
		Kind         int    `json:"kind"`
		// The times are uint64 nanoseconds since the epoch, which proto3's
		// JSON writes as strings.
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []OTLPKeyValue `json:"attributes"`
	}
	OTLPKeyValue struct {
		Key   string    `json:"key"`
		Value OTLPValue `json:"value"`
	}
	OTLPValue struct {
		StringValue string `json:"stringValue"`
	}
)

// OTLP span kinds.
const (
	otlpKindInternal = 1
	otlpKindServer   = 2
)

func kv(k, v string) OTLPKeyValue { return OTLPKeyValue{Key: k, Value: OTLPValue{StringValue: v}} }

// OTLP returns the trace in OTLP JSON.
func (t Trace) OTLP() OTLPDocument {
	doc := OTLPDocument{ResourceSpans: []OTLPResourceSpans{}}
	byNode := map[string]int{}
	for _, sp := range t.Spans {
		i, ok := byNode[sp.Node]
		if !ok {
			i = len(doc.ResourceSpans)
			byNode[sp.Node] = i
			doc.ResourceSpans = append(doc.ResourceSpans, OTLPResourceSpans{
				Resource:   OTLPResource{Attributes: []OTLPKeyValue{kv("service.name", "skulk"), kv("service.instance.id", sp.Node), kv("node", sp.Node)}},
				ScopeSpans: []OTLPScopeSpans{{Scope: OTLPScope{Name: "skulk"}, Spans: []OTLPSpan{}}},
			})
		}
		kind := otlpKindInternal
		if sp.Parent == 0 {
			kind = otlpKindServer
		}
		attrs := []OTLPKeyValue{kv("node", sp.Node)}
		for _, a := range sp.Attrs {
			attrs = append(attrs, kv(a.Key, a.Value))
		}
		ss := &doc.ResourceSpans[i].ScopeSpans[0]
		ss.Spans = append(ss.Spans, OTLPSpan{TraceID: t.ID, SpanID: sp.ID.String(), ParentSpanID: sp.Parent.String(), Name: sp.Name, Kind: kind,
			StartTimeUnixNano: strconv.FormatInt(sp.Start.UnixNano(), 10), EndTimeUnixNano: strconv.FormatInt(sp.End().UnixNano(), 10),
			Attributes: attrs})
	}
	return doc
}
