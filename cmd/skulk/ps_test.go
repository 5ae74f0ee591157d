package main

import (
	"net/http"
	"net/http/httptest"
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
