// Package trace records where a request's time goes as it crosses the
// fabric: spans (a name, the node that ran it, a start and a duration,
// and the span it belongs to) that each node adds to the request's
// recorder, and the bounded store where the node that owns a request keeps
// its finished traces for GET /v1/traces/{id}, as JSON or as OTLP JSON.
//
// A request's id is minted by the API for every request; a recorder exists
// only while the cluster's tracing flag is on, so with tracing off nothing
// here runs but NewID. It depends on the standard library only.
package trace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// IDHeader is the response header that carries a request's trace id.
const IDHeader = "X-Skulk-Trace"

// NewID returns a trace id: 128 random bits in 32 hex digits, as OTLP
// spells a trace id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	var h [32]byte
	hex.Encode(h[:], b[:])
	return string(h[:]) // the one allocation
}

// ValidID reports whether s is spelled as NewID spells an id.
func ValidID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// SpanID identifies a span within its trace; 0 is no span. It is written
// as 16 hex digits.
type SpanID uint64

// NewSpanID returns a random non-zero span id.
func NewSpanID() SpanID {
	for {
		if id := SpanID(mrand.Uint64()); id != 0 {
			return id
		}
	}
}

func (id SpanID) String() string {
	if id == 0 {
		return ""
	}
	var b [8]byte
	for i := range 8 {
		b[i] = byte(id >> (56 - 8*i))
	}
	return hex.EncodeToString(b[:])
}

// MarshalText writes the id as 16 hex digits ("" for no span).
func (id SpanID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads an id written by MarshalText.
func (id *SpanID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = 0
		return nil
	}
	v, err := strconv.ParseUint(string(b), 16, 64)
	*id = SpanID(v)
	return err
}

// Attr is one key-value attribute of a span.
type Attr struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Span is one timed step of a request on one node. It travels between
// nodes in this shape (JSON) and is kept so in the store.
type Span struct {
	Name     string        `json:"name"`
	Node     string        `json:"node"`
	ID       SpanID        `json:"span_id"`
	Parent   SpanID        `json:"parent,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`
	Attrs    []Attr        `json:"attrs,omitempty"`
}

// End is when the span ended.
func (s Span) End() time.Time { return s.Start.Add(s.Duration) }

// Recorder collects one request's spans on a node. Its methods are safe for
// concurrent use; a nil Recorder records nothing.
type Recorder struct {
	id   string
	node string
	root SpanID

	mu    sync.Mutex
	spans []Span
}

// NewRecorder returns the recorder of trace id on node, with a fresh root
// span id (the span of the whole request on its owner).
func NewRecorder(id, node string) *Recorder {
	return &Recorder{id: id, node: node, root: NewSpanID(), spans: make([]Span, 0, 12)}
}

// ID is the trace id.
func (r *Recorder) ID() string { return r.id }

// Node is the node the recorder records on.
func (r *Recorder) Node() string { return r.node }

// Root is the id reserved for the request's whole span on its owner.
func (r *Recorder) Root() SpanID { return r.root }

// Add records a span that ran on the recorder's node from start to end,
// and returns its id (id, when not 0, or a fresh one).
func (r *Recorder) Add(name string, id, parent SpanID, start, end time.Time, attrs ...Attr) SpanID {
	if r == nil {
		return 0
	}
	if id == 0 {
		id = NewSpanID()
	}
	r.Merge(Span{Name: name, Node: r.node, ID: id, Parent: parent, Start: start, Duration: end.Sub(start), Attrs: attrs})
	return id
}

// Merge records spans as they are: those another node recorded.
func (r *Recorder) Merge(spans ...Span) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	r.mu.Unlock()
}

// Spans returns a copy of the spans recorded so far.
func (r *Recorder) Spans() []Span {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Carrier is the API's per-request slot, which it puts in the request's
// context: it holds the id the API returned, and a service that finds the
// cluster's tracing on attaches the request's recorder to it, so that the
// API adds its own spans and stores the trace once the answer is done.
type Carrier interface {
	TraceID() string
	Attach(*Recorder)
}

type carrierKey struct{}

// WithCarrier returns ctx carrying c.
func WithCarrier(ctx context.Context, c Carrier) context.Context {
	return context.WithValue(ctx, carrierKey{}, c)
}

// CarrierFrom returns the carrier of ctx, or nil.
func CarrierFrom(ctx context.Context) Carrier {
	c, _ := ctx.Value(carrierKey{}).(Carrier)
	return c
}

// Begin starts recording the request of ctx on node: it attaches a new
// recorder to the request's carrier and returns it. Without a carrier
// (a request that did not come through the API) it returns nil.
func Begin(ctx context.Context, node string) *Recorder {
	c := CarrierFrom(ctx)
	if c == nil {
		return nil
	}
	r := NewRecorder(c.TraceID(), node)
	c.Attach(r)
	return r
}

// Scope is where a request's next spans belong: its recorder and the span
// they are children of.
type Scope struct {
	Rec    *Recorder
	Parent SpanID
}

type scopeKey struct{}

// WithScope returns ctx carrying s.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom returns the scope of ctx; its Rec is nil when the request is
// not traced.
func ScopeFrom(ctx context.Context) Scope {
	s, _ := ctx.Value(scopeKey{}).(Scope)
	return s
}

// Remote is what a task carries to another node when it is traced: the
// trace id and the span the far node's spans belong to.
type Remote struct {
	ID     string `json:"id"`
	Parent SpanID `json:"parent"`
}

// Trace is one finished request as its owner keeps it.
type Trace struct {
	ID    string
	At    time.Time // when it was stored
	Spans []Span
}
