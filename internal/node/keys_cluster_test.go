package node_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// keyPropagation bounds how long a key added or removed on one member may
// take to be enforced on every member.
const keyPropagation = 5 * time.Second

// authStatus is the status of GET path on n with key as the bearer ("" for
// none).
func authStatus(t *testing.T, n *clusterNode, method, path, key string) int {
	t.Helper()
	req, _ := http.NewRequest(method, n.base+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// keyRequest sends a /v1/keys request to n with key ("" for none) and
// decodes the answer into v.
func keyRequest(t *testing.T, n *clusterNode, method, path, key, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, n.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	} else if resp.StatusCode != 200 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// everywhere waits until check holds on every node, and returns how long
// the slowest took; it fails the test past keyPropagation.
func everywhere(t *testing.T, nodes []*clusterNode, what string, check func(n *clusterNode) bool) time.Duration {
	t.Helper()
	start := time.Now()
	var slowest time.Duration
	for i, n := range nodes {
		for !check(n) {
			if time.Since(start) > keyPropagation {
				t.Fatalf("%s: node %d not within %v", what, i, keyPropagation)
			}
			time.Sleep(10 * time.Millisecond)
		}
		slowest = max(slowest, time.Since(start))
	}
	t.Logf("%s: on all %d nodes after %v", what, len(nodes), slowest.Round(time.Millisecond))
	return slowest
}

// TestKeysAcrossTheCluster: a key added through one member's API admits
// requests on every member within 5 s, and once removed through another
// member is refused on every member within 5 s, without restarts. The
// first admin key is added from loopback on a cluster without keys.
func TestKeysAcrossTheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	nodes := loopbackCluster(t, 3)

	type added struct {
		Name, Scope, Key string
	}
	var ops added
	if code := keyRequest(t, nodes[0], "POST", "/v1/keys", "", `{"name": "ops", "scope": "admin"}`, &ops); code != 200 || !strings.HasPrefix(ops.Key, "sk-skulk-") {
		t.Fatalf("adding the first admin key from loopback: %d %+v", code, ops)
	}
	everywhere(t, nodes, "admin key ops admits, no key is refused", func(n *clusterNode) bool {
		return authStatus(t, n, "GET", "/v1/keys", ops.Key) == 200 && authStatus(t, n, "GET", "/state", "") == 401
	})

	var ci added
	if code := keyRequest(t, nodes[1], "POST", "/v1/keys", ops.Key, `{"name": "ci", "scope": "inference"}`, &ci); code != 200 {
		t.Fatalf("adding an inference key on node 1: %d", code)
	}
	addedIn := everywhere(t, nodes, "inference key ci admits (added on node 1)", func(n *clusterNode) bool {
		return authStatus(t, n, "GET", "/v1/models", ci.Key) == 200
	})
	for i, n := range nodes {
		if code := authStatus(t, n, "GET", "/v1/keys", ci.Key); code != 403 {
			t.Errorf("node %d: the inference key on an admin route: %d, want 403", i, code)
		}
	}

	if code := keyRequest(t, nodes[2], "DELETE", "/v1/keys/ci", ops.Key, "", nil); code != 200 {
		t.Fatalf("removing ci on node 2: %d", code)
	}
	removedIn := everywhere(t, nodes, "inference key ci refused (removed on node 2)", func(n *clusterNode) bool {
		return authStatus(t, n, "GET", "/v1/models", ci.Key) == 401
	})
	for i, n := range nodes {
		if code := authStatus(t, n, "GET", "/v1/models", ops.Key); code != 200 {
			t.Errorf("node %d: the admin key after ci's removal: %d", i, code)
		}
	}
	t.Logf("propagation: added %v, removed %v", addedIn.Round(time.Millisecond), removedIn.Round(time.Millisecond))
	for i, n := range nodes {
		for _, k := range []string{ops.Key, ci.Key} {
			if strings.Contains(n.logs.String(), k) {
				t.Errorf("node %d logs a key", i)
			}
		}
		var st struct {
			AddedKeys map[string]struct {
				Scope, Digest string
			} `json:"added_keys"`
		}
		if code := keyRequest(t, n, "GET", "/state", ops.Key, "", &st); code != 200 || st.AddedKeys["ops"].Scope != "admin" ||
			st.AddedKeys["ops"].Digest != "redacted" || len(st.AddedKeys) != 1 {
			t.Errorf("node %d: GET /state %d, run-time keys %+v: want ops alone, its digest redacted", i, code, st.AddedKeys)
		}
	}
}
