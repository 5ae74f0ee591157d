package trace

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"testing"
	"time"
)

func span(name, node string, id, parent SpanID, start time.Time, d time.Duration) Span {
	return Span{Name: name, Node: node, ID: id, Parent: parent, Start: start, Duration: d}
}

// TestStoreCount: a full store drops its oldest trace for a new one.
func TestStoreCount(t *testing.T) {
	s := NewStore(3, time.Hour, nil)
	for i := range 5 {
		s.Put(strconv.Itoa(i), nil)
	}
	if s.Len() != 3 {
		t.Fatalf("len %d, want 3", s.Len())
	}
	for i, want := range []bool{false, false, true, true, true} {
		if _, ok := s.Get(strconv.Itoa(i)); ok != want {
			t.Errorf("trace %d held %t, want %t", i, ok, want)
		}
	}
	s.Put("5", nil) // evicts "2", the oldest left
	if _, ok := s.Get("2"); ok {
		t.Error("trace 2 outlived the capacity")
	}
	if _, ok := s.Get("5"); !ok {
		t.Error("trace 5 missing")
	}
}

// TestStoreAge: a trace older than the store's age is gone.
func TestStoreAge(t *testing.T) {
	now := time.Unix(1000, 0)
	s := NewStore(10, time.Hour, func() time.Time { return now })
	s.Put("old", nil)
	now = now.Add(30 * time.Minute)
	s.Put("new", nil)
	now = now.Add(31 * time.Minute)
	if _, ok := s.Get("old"); ok {
		t.Error("a trace of 61 minutes is still served")
	}
	if _, ok := s.Get("new"); !ok {
		t.Error("a trace of 31 minutes is gone")
	}
}

// TestStoreOrder: Get orders the spans by start, whatever order they came in.
func TestStoreOrder(t *testing.T) {
	s := NewStore(0, 0, nil)
	t0 := time.Now()
	s.Put("x", []Span{span("b", "n", 2, 1, t0.Add(2), 1), span("a", "n", 1, 0, t0, 5), span("c", "m", 3, 2, t0.Add(3), 1)})
	tr, _ := s.Get("x")
	var got string
	for _, sp := range tr.Spans {
		got += sp.Name
	}
	if got != "abc" {
		t.Fatalf("order %q", got)
	}
}

// TestOTLPShape: the OTLP document has a resource per node, 32 and 16 hex
// digit ids, parents, and string nanosecond times that end after they start.
func TestOTLPShape(t *testing.T) {
	id := NewID()
	t0 := time.Unix(1700000000, 123)
	tr := Trace{ID: id, Spans: []Span{
		span("api", "owner", 0xa, 0, t0, 10*time.Millisecond),
		span("deliver", "owner", 0xb, 0xa, t0.Add(time.Millisecond), time.Millisecond),
		span("worker.serve", "far", 0xc, 0xb, t0.Add(2*time.Millisecond), 5*time.Millisecond),
	}}
	b, err := json.Marshal(tr.OTLP())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []struct {
					Key   string
					Value struct{ StringValue string }
				}
			}
			ScopeSpans []struct {
				Scope struct{ Name string }
				Spans []struct {
					TraceID, SpanID, ParentSpanID, Name string
					StartTimeUnixNano, EndTimeUnixNano  string
					Attributes                          []struct {
						Key   string
						Value struct{ StringValue string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.ResourceSpans) != 2 {
		t.Fatalf("%d resources, want one per node: %s", len(doc.ResourceSpans), b)
	}
	hex32, hex16 := regexp.MustCompile(`^[0-9a-f]{32}$`), regexp.MustCompile(`^[0-9a-f]{16}$`)
	n := 0
	for _, rs := range doc.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				n++
				if !hex32.MatchString(sp.TraceID) || sp.TraceID != id || !hex16.MatchString(sp.SpanID) {
					t.Errorf("ids %q %q", sp.TraceID, sp.SpanID)
				}
				if sp.Name != "api" && !hex16.MatchString(sp.ParentSpanID) {
					t.Errorf("%s: parent %q", sp.Name, sp.ParentSpanID)
				}
				start, err1 := strconv.ParseInt(sp.StartTimeUnixNano, 10, 64)
				end, err2 := strconv.ParseInt(sp.EndTimeUnixNano, 10, 64)
				if err1 != nil || err2 != nil || end <= start {
					t.Errorf("%s: times %s %s", sp.Name, sp.StartTimeUnixNano, sp.EndTimeUnixNano)
				}
				if len(sp.Attributes) == 0 || sp.Attributes[0].Key != "node" || sp.Attributes[0].Value.StringValue == "" {
					t.Errorf("%s: attributes %+v", sp.Name, sp.Attributes)
				}
			}
		}
	}
	if n != 3 {
		t.Fatalf("%d spans, want 3", n)
	}
	if doc.ResourceSpans[0].ScopeSpans[0].Spans[0].StartTimeUnixNano != strconv.FormatInt(t0.UnixNano(), 10) {
		t.Errorf("start %s", doc.ResourceSpans[0].ScopeSpans[0].Spans[0].StartTimeUnixNano)
	}
}

// TestSpanWire: a span crosses the data plane as JSON unchanged.
func TestSpanWire(t *testing.T) {
	in := Span{Name: "decode", Node: "n", ID: NewSpanID(), Parent: 7, Start: time.Unix(1, 5).UTC(), Duration: 1234567, Attrs: []Attr{{"k", "v"}}}
	b, _ := json.Marshal(in)
	var out Span
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != in.ID || out.Parent != in.Parent || !out.Start.Equal(in.Start) || out.Duration != in.Duration || out.Attrs[0] != in.Attrs[0] {
		t.Fatalf("%+v != %+v (%s)", out, in, b)
	}
}

type note struct {
	id  string
	rec *Recorder
}

func (n *note) TraceID() string    { return n.id }
func (n *note) Attach(r *Recorder) { n.rec = r }

// TestBegin: a service that begins a trace attaches the recorder to the
// API's carrier; without one it records nothing.
func TestBegin(t *testing.T) {
	if r := Begin(context.Background(), "n"); r != nil {
		t.Fatal("a recorder without a carrier")
	}
	n := &note{id: NewID()}
	r := Begin(WithCarrier(context.Background(), n), "n")
	if r == nil || n.rec != r || r.ID() != n.id {
		t.Fatal("the recorder is not attached")
	}
	var nilRec *Recorder
	nilRec.Add("x", 0, 0, time.Now(), time.Now()) // no panic
	if !ValidID(n.id) || ValidID("xyz") {
		t.Fatal("ValidID")
	}
}

func BenchmarkNewID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = NewID()
	}
}
