package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/observe/trace"
)

// TestRenderTrace: spans print as a tree, children indented under their
// parent in the order they started, whatever order the document lists
// them in; a span whose parent is missing stands at the top.
func TestRenderTrace(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	const a, b = "aaaaaaaa-1111-4111-8111-111111111111", "bbbbbbbb-2222-4222-8222-222222222222"
	span := func(name, node string, id, parent trace.SpanID, start, dur float64, attrs map[string]string) trace.DocSpan {
		return trace.DocSpan{Name: name, Node: node, SpanID: id, Parent: parent, Start: at(start), DurationMS: dur, Attrs: attrs}
	}
	tests := []struct {
		name  string
		spans []trace.DocSpan
		want  []string // the lines after the header, spaces squeezed
	}{
		{
			name: "across_nodes",
			spans: []trace.DocSpan{
				span("decode", b, 7, 5, 9, 20, nil),
				span("api", a, 1, 0, 0, 31.25, map[string]string{"status": "200", "route": "POST /v1/chat/completions"}),
				span("deliver", a, 4, 1, 2, 1.5, map[string]string{"to": b}),
				span("gateway.pick", a, 3, 1, 1, 0.5, map[string]string{"instance": "i1"}),
				span("worker.serve", b, 5, 4, 2.5, 27, map[string]string{"outcome": "done"}),
				span("prefill", b, 6, 5, 2.5, 6.5, nil),
			},
			want: []string{
				"SPAN START MS MS NODE ATTRIBUTES",
				`api 0.0 31.2 aaaaaaaa route="POST /v1/chat/completions" status=200`,
				" gateway.pick 1.0 0.5 aaaaaaaa instance=i1",
				" deliver 2.0 1.5 aaaaaaaa to=bbbbbbbb",
				"  worker.serve 2.5 27.0 bbbbbbbb outcome=done",
				"   prefill 2.5 6.5 bbbbbbbb",
				"   decode 9.0 20.0 bbbbbbbb",
			},
		},
		{
			name: "orphan_on_top",
			spans: []trace.DocSpan{
				span("api", a, 1, 0, 1, 3, nil),
				span("worker.serve", b, 5, 99, 0, 2, nil),
			},
			want: []string{
				"SPAN START MS MS NODE ATTRIBUTES",
				"worker.serve 0.0 2.0 bbbbbbbb",
				"api 1.0 3.0 aaaaaaaa",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			if err := renderTrace(&out, trace.Document{TraceID: "t1", Spans: tt.spans}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			if !strings.HasPrefix(lines[0], "trace t1: ") {
				t.Errorf("header %q", lines[0])
			}
			var got []string
			for _, l := range lines[1:] {
				got = append(got, squeeze(l))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s\n(the output:\n%s)", strings.Join(got, "\n"), strings.Join(tt.want, "\n"), out.String())
			}
		})
	}
}

// squeeze keeps a line's indentation as one space per level and squeezes
// the runs of spaces between columns into one.
func squeeze(l string) string {
	indent := len(l) - len(strings.TrimLeft(l, " "))
	return strings.Repeat(" ", indent/2) + strings.Join(strings.Fields(l), " ")
}

// TestLiveTrace: skulk trace on, a request whose trace id skulk run
// --verbose prints, and skulk trace show prints its spans as a tree; --json
// prints the document; skulk trace off turns the flag off again.
func TestLiveTrace(t *testing.T) {
	n := startLiveNode(t)
	if code, out, errs := n.skulk(t, "", nil, "trace", "on"); code != 0 || !strings.Contains(out, "tracing on") {
		t.Fatalf("trace on: exit %d %q %q", code, out, errs)
	}
	n.waitTracing(t, true)
	code, _, errs := n.skulk(t, "", nil, "run", "stories260k", "Once upon a time", "--max-tokens", "16", "--temperature", "0", "--verbose")
	m := regexp.MustCompile(`trace: +([0-9a-f]{32})`).FindStringSubmatch(errs)
	if code != 0 || m == nil {
		t.Fatalf("run --verbose: exit %d, no trace id in %q", code, errs)
	}
	id := m[1]

	// The trace is kept once the answer is complete.
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; {
		code, out, errs = n.skulk(t, "", nil, "trace", "show", id)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace show %s: exit %d %q %q", id, code, out, errs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("skulk trace show:\n%s", out)
	// Each span at its depth: api → gateway.pick, deliver → worker.serve →
	// prefill, decode; with a duration and the node.
	var nodeID struct {
		ID string `json:"nodeId"`
	}
	n.getJSON(t, "/v1/diagnostics/node", &nodeID)
	for _, want := range []struct {
		name  string
		depth int
	}{{"api", 0}, {"gateway.pick", 1}, {"deliver", 1}, {"worker.serve", 2}, {"prefill", 3}, {"decode", 3}} {
		re := regexp.MustCompile(`(?m)^` + strings.Repeat("  ", want.depth) + regexp.QuoteMeta(want.name) + ` +[0-9.]+ +[0-9.]+ +` + regexp.QuoteMeta(shortID(nodeID.ID)) + `\b`)
		if !re.MatchString(out) {
			t.Errorf("trace show: no line %s", re)
		}
	}
	if !strings.Contains(out, `route="POST /v1/chat/completions"`) || !strings.HasPrefix(out, "trace "+id+": ") {
		t.Errorf("trace show: no header or route attribute")
	}
	lines := strings.Split(out, "\n")
	pos := func(name string) int {
		for i, l := range lines {
			if strings.Fields(l + " x")[0] == name {
				return i
			}
		}
		return -1
	}
	if !(pos("api") < pos("gateway.pick") && pos("gateway.pick") < pos("deliver") && pos("deliver") < pos("worker.serve") &&
		pos("worker.serve") < pos("prefill") && pos("prefill") < pos("decode")) {
		t.Errorf("trace show: spans out of order")
	}

	code, out, errs = n.skulk(t, "", nil, "trace", "show", id, "--json")
	var doc trace.Document
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.TraceID != id || len(doc.Spans) < 6 {
		t.Fatalf("trace show --json: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := n.skulk(t, "", nil, "trace", "show", strings.Repeat("0", 32)); code != 1 || !strings.Contains(errs, "skulk trace on") {
		t.Errorf("trace show of an unknown id: exit %d %q", code, errs)
	}
	if code, out, errs := n.skulk(t, "", nil, "trace", "off"); code != 0 || !strings.Contains(out, "tracing off") {
		t.Fatalf("trace off: exit %d %q %q", code, out, errs)
	}
	n.waitTracing(t, false)
}

// waitTracing waits until the node's State has the tracing flag on.
func (n *liveNode) waitTracing(t *testing.T, on bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var st struct {
			Tracing bool `json:"tracing"`
		}
		n.getJSON(t, "/state", &st)
		if st.Tracing == on {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the State's tracing flag is not %v", on)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
