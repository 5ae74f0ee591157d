package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPsWarnsOfPersistence checks that `skulk ps` puts a node's
// persistence problems above the table, one line each, and nothing when
// every node keeps what it decides.
func TestPsWarnsOfPersistence(t *testing.T) {
	tests := []struct {
		name, state string
		want        []string
	}{
		{"healthy", `{"instances":{},"nodeHealth":{"n1":{"healthy":true,"status":"ok","reasons":[]}}}`, nil},
		{"degraded", `{"instances":{"i1":{"model":"m","status":"ready"}},"nodeHealth":{
			"n2":{"healthy":false,"status":"error","reasons":["history_lost"],"persistence":[{"store":"event_log","problem":"history_lost","message":"history lost after index 7: ..."}]},
			"n1":{"healthy":false,"status":"error","reasons":["persistence_degraded"],"persistence":[{"store":"event_log","problem":"degraded","message":"persistence degraded: the event log stopped writing: ..."}]}}}`,
			[]string{"warning: node n1: persistence degraded: the event log stopped writing: ...", "warning: node n2: history lost after index 7: ..."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tt.state)) }))
			defer srv.Close()
			code, out, errs := runCLI(t, "ps", "--host", srv.URL)
			if code != 0 || !strings.HasPrefix(out, "INSTANCE") {
				t.Fatalf("exit %d: %s %s", code, out, errs)
			}
			var got []string
			if errs != "" {
				got = strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPsRanks: `skulk ps` lists every rank of a split instance under it
// (node, runner status, layers and a runner's reason) and none under a
// whole one; a node shows by its name, with its id's start when another
// node has the same name; the table is testdata/ps.golden (-update rewrites it).
func TestPsRanks(t *testing.T) {
	state := `{"instances":{
		"b2c4e6a8d0f1":{"model":"stories260k","status":"pending","context_tokens":512,
			"placement":[{"node":"node-a","layer_start":0,"layer_end":3},{"node":"node-b0123456","layer_start":3,"layer_end":5},{"node":"node-c0123456","layer_start":5,"layer_end":6}],
			"runners":[{"id":"r1","status":"ready","reason":""},{"id":"r2","status":"loading","reason":""},{"id":"","status":"failed","reason":"load failed: link out: the other end of the link did not connect in time"}]},
		"a1b3c5d7e9f0":{"model":"qwen3:0.6b","status":"ready","context_tokens":4096,
			"placement":[{"node":"node-a","layer_start":0,"layer_end":28}],"runners":[{"id":"r0","status":"running","reason":""}]}},
		"nodeResources":[{"id":"node-a","name":"studio"},{"id":"node-b0123456","name":"pi"},{"id":"node-c0123456","name":"pi"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(state)) }))
	defer srv.Close()
	code, out, errs := runCLI(t, "ps", "--host", srv.URL)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	golden := filepath.Join("testdata", "ps.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("skulk ps:\n%s\nwant (%s):\n%s", out, golden, want)
	}
}

// TestPsLostRanks: a rank on a node gossip no longer reaches shows as
// lost, and so does its instance, whatever the runner last reported.
func TestPsLostRanks(t *testing.T) {
	state := `{"instances":{"c3":{"model":"stories260k","status":"ready","context_tokens":512,
		"placement":[{"node":"node-a","layer_start":0,"layer_end":3},{"node":"node-b","layer_start":3,"layer_end":6}],
		"runners":[{"id":"r1","status":"ready","reason":""},{"id":"r2","status":"ready","reason":""}]}},
		"nodeHealth":{"node-b":{"status":"unhealthy","reasons":["unreachable"]},"node-a":{"status":"ok","reasons":[]}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(state)) }))
	defer srv.Close()
	code, out, errs := runCLI(t, "ps", "--host", srv.URL)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	lines := strings.Split(out, "\n")
	if !strings.Contains(lines[1], " lost ") || !strings.Contains(lines[2], "ready") || !strings.Contains(lines[3], "lost") ||
		!strings.Contains(lines[3], "node unreachable") {
		t.Fatalf("skulk ps:\n%s", out)
	}
}
