package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/observe/trace"
)

func newTraceCmd(s stdio) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "trace",
		Short: "Request traces: turn the cluster's tracing on or off, show where a request's time went",
		Long: `Every answer of a node carries its request's trace id (32 hex digits) in the
X-Skulk-Trace header ('curl -i' shows it; 'skulk run --verbose' and 'skulk chat
--verbose' print it after each reply). While the cluster's tracing is on, the
nodes a request crosses record its spans, and the node that answered it keeps
the trace (the latest 1,000 requests of the last hour): 'skulk trace show ID'
asks that node for it.`,
		Example: `  skulk trace on
  skulk run stories260k "Once upon a time" --verbose   # prints the trace id
  skulk trace show 4bf92f3577b34da6a3ce929d0e0e4736
  skulk trace off`,
	})
	c.AddCommand(newTraceSetCmd(s, true), newTraceSetCmd(s, false), newTraceShowCmd(s))
	return c
}

func newTraceSetCmd(s stdio, on bool) *cobra.Command {
	var host string
	use, short := "off", "Stop recording request traces on every node of the cluster (admin key)"
	if on {
		use, short = "on", "Record request traces on every node of the cluster (admin key)"
	}
	c := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: "  skulk trace " + use + "\n  skulk trace " + use + " --host 10.0.0.5",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := clientFor(cmd, host).call(cmd.Context(), http.MethodPost, "/tracing", map[string]bool{"enabled": on}, nil); err != nil {
				return err
			}
			if on {
				fmt.Fprintln(s.out, "tracing on: every answer's X-Skulk-Trace header names its trace; 'skulk trace show ID' shows it")
			} else {
				fmt.Fprintln(s.out, "tracing off: the traces already kept stay until they age out")
			}
			return nil
		},
	}
	addHostFlag(c, &host)
	return c
}

func newTraceShowCmd(s stdio) *cobra.Command {
	var host string
	var asJSON, otlp bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show a request's trace: its spans as a tree, with durations and nodes",
		Long: `Show the trace of a request as a tree of spans: each span under the one it is part
of, in the order they started, with when it started (ms after the request
arrived), how long it took, the node that ran it and its attributes. ID may be
the start of the id no other trace shares. Ask the node that answered the
request (--host): it alone keeps the trace.`,
		Example: `  skulk trace show 4bf92f3577b34da6a3ce929d0e0e4736
  skulk trace show 4bf9                                   # the start of the id
  skulk trace show 4bf92f3577b34da6a3ce929d0e0e4736 --json
  skulk trace show 4bf92f3577b34da6a3ce929d0e0e4736 --otlp > trace.json   # for Jaeger or Tempo`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && otlp {
				return usageErrorf("--json and --otlp: choose one")
			}
			path := "/v1/traces/" + url.PathEscape(args[0])
			if otlp {
				path += "?format=otlp"
			}
			resp, err := clientFor(cmd, host).do(cmd.Context(), http.MethodGet, path, nil)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if asJSON || otlp {
				_, err := io.Copy(s.out, resp.Body)
				return err
			}
			var doc trace.Document
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				return fmt.Errorf("reading the trace: %w", err)
			}
			return renderTrace(s.out, doc)
		},
	}
	addHostFlag(c, &host)
	c.Flags().BoolVar(&asJSON, "json", false, "print the trace as the node answers it (GET /v1/traces/ID)")
	c.Flags().BoolVar(&otlp, "otlp", false, "print the trace as OTLP JSON, which Jaeger and Tempo import")
	return c
}

// renderTrace writes the trace's spans as a tree: children indented under
// their parent, siblings in the order they started; a span whose parent is
// not in the trace stands at the top.
func renderTrace(w io.Writer, doc trace.Document) error {
	spans := doc.Spans
	known := make(map[trace.SpanID]bool, len(spans))
	for _, sp := range spans {
		known[sp.SpanID] = true
	}
	children := map[trace.SpanID][]int{}
	var roots []int
	var origin time.Time
	for i, sp := range spans {
		if origin.IsZero() || sp.Start.Before(origin) {
			origin = sp.Start
		}
		if sp.Parent != 0 && known[sp.Parent] && sp.Parent != sp.SpanID {
			children[sp.Parent] = append(children[sp.Parent], i)
		} else {
			roots = append(roots, i)
		}
	}
	byStart := func(idx []int) {
		sort.SliceStable(idx, func(a, b int) bool { return spans[idx[a]].Start.Before(spans[idx[b]].Start) })
	}
	nodes := map[string]bool{}
	for _, sp := range spans {
		nodes[sp.Node] = true
	}
	fmt.Fprintf(w, "trace %s: %d %s on %d %s\n", doc.TraceID, len(spans), plural(len(spans), "span", "spans"), len(nodes), plural(len(nodes), "node", "nodes"))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SPAN\tSTART MS\tMS\tNODE\tATTRIBUTES")
	seen := make([]bool, len(spans))
	var walk func(idx []int, depth int)
	walk = func(idx []int, depth int) {
		byStart(idx)
		for _, i := range idx {
			if seen[i] { // a cycle of parents: print each span once
				continue
			}
			seen[i] = true
			sp := spans[i]
			fmt.Fprintf(tw, "%s%s\t%.1f\t%.1f\t%s\t%s\n", strings.Repeat("  ", depth), sp.Name,
				float64(sp.Start.Sub(origin))/float64(time.Millisecond), sp.DurationMS, shortID(sp.Node), spanAttrs(sp.Attrs))
			walk(children[sp.SpanID], depth+1)
		}
	}
	walk(roots, 0)
	// Spans only reachable through a cycle of parents.
	var rest []int
	for i := range spans {
		if !seen[i] {
			rest = append(rest, i)
		}
	}
	walk(rest, 0)
	return tw.Flush()
}

// spanAttrs is a span's attributes as key=value, sorted by key; node ids
// (a deliver span's "to") are shortened as the NODE column is.
func spanAttrs(attrs map[string]string) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := attrs[k]
		if k == "to" {
			v = shortID(v)
		}
		if v == "" || strings.ContainsAny(v, " \t\"=") {
			v = strconv.Quote(v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// shortID is the start of a node's id, enough to tell the nodes of a
// cluster apart.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
