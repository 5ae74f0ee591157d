package node_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestConnLimitsByKey runs a node with API keys and every client on
// 127.0.0.1, as behind a reverse proxy on the node's machine: one client's
// 300 idle connections, with a key or without, do not stop a client with
// another key from being served at once.
func TestConnLimitsByKey(t *testing.T) {
	const idle = 300
	n := startNode(t, t.TempDir(), "SKULK_INFERENCE_KEYS=alice=alice-secret-1,bob=bob-secret-22",
		"SKULK_MAX_CONNS_PER_CLIENT=16", "SKULK_MAX_CONNS=64")
	addr := strings.TrimPrefix(n.base, "http://")
	// models asks GET /v1/models with key (none when "") on a new
	// connection it leaves open, and returns the status.
	models := func(key string) int {
		t.Helper()
		c := dialFrom(t, "127.0.0.1", addr)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		auth := ""
		if key != "" {
			auth = "Authorization: Bearer " + key + "\r\n"
		}
		fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n%s\r\n", auth)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("GET /v1/models: %v", err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	tests := []struct {
		name   string
		key    string // the idle client's
		status int    // what its requests get
	}{
		{name: "one_key", key: "alice-secret-1", status: http.StatusOK},
		{name: "no_key", status: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range idle {
				if got := models(tt.key); got != tt.status {
					t.Fatalf("the idle client's request %d: %d, want %d", i, got, tt.status)
				}
			}
			start := time.Now()
			got := models("bob-secret-22")
			took := time.Since(start)
			t.Logf("bob's request after %d idle connections: %d in %v", idle, got, took)
			if got != http.StatusOK || took > 2*time.Second {
				t.Fatalf("bob's request: %d in %v, want 200 at once", got, took)
			}
		})
	}
	for _, secret := range []string{"alice-secret-1", "bob-secret-22"} {
		if strings.Contains(n.logs.String(), secret) {
			t.Errorf("the node's log shows a key")
		}
	}
}
