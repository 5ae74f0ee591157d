//go:build linux

package node_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/testkit/netns"
)

// aliceKey is the inference key of the security tests' protected cluster.
const aliceKey = "alice-inference-key-42"

// TestNetnsSecureByDefault plays the attacker on the same LAN: a node
// without the cluster's secret, told where the cluster is, is refused by
// gossip and QUIC, so its own open API reaches nothing of the cluster; both
// sides log the refusal and the cluster's diagnostics list it. With the
// invite line it joins, and then its API enforces the keys the protected
// node set, though it has none of its own. A node with no key at all serves
// loopback clients only.
func TestNetnsSecureByDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace security test")
	}
	c := netns.New(t, netns.Options{Hosts: 3})
	// The protected node starts a new cluster (it generates the key) with
	// an admin key and an inference key, and runs the demo model.
	a := startNet(t, c, c.Host(1), nil, "SKULK_CLUSTER_KEY=", "SKULK_INFERENCE_KEYS=alice="+aliceKey)
	inst := placeReady(t, a, "stories260k")

	// The attacker: no secret, bootstrap peers of the protected cluster,
	// its own API open.
	x := startNet(t, c, c.Host(3), []string{"--bootstrap-peers", c.Host(1).Addr() + ":52416", "--api-open"},
		"SKULK_CLUSTER_KEY=", "SKULK_API_KEY=")
	x.key = ""
	for _, n := range []*netNode{x, a} {
		if _, err := n.proc.WaitLog(`could not be decrypted: different cluster key or network version`, 60*time.Second); err != nil {
			t.Fatalf("%s never logged the refusal: %v", n.host.Name(), err)
		}
	}
	waitRefused(t, a, x.host.Addr())
	if s, ok := x.state(); !ok || len(s.Nodes) != 1 || len(s.Instances) != 0 {
		t.Fatalf("the refused node's /state shows the cluster: %+v", s)
	}
	if code, b := x.do("DELETE", "/instance/"+inst, nil); code != http.StatusNotFound {
		t.Fatalf("the refused node deleted the cluster's instance: %d %s", code, b)
	}
	if code, b := x.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"}); code != http.StatusOK {
		t.Fatalf("the refused node cannot place on itself: %d %s", code, b)
	}
	// A chat there is answered by its own instance, never the cluster's.
	if code, b := x.chat(); code == http.StatusOK {
		if s, _ := x.state(); len(s.Instances) != 1 || s.Instances[inst].Status != "" {
			t.Fatalf("the refused node chatted, and its State holds %+v (the cluster's instance is %s): %s", s.Instances, inst, b)
		}
	}
	// Nothing of that reached the protected node.
	s, _ := a.state()
	if len(s.Nodes) != 1 || len(s.Instances) != 1 || s.Instances[inst].Status != "ready" {
		t.Fatalf("the protected node's State changed: %+v", s)
	}
	x.proc.Stop()

	// With the invite line the same machine joins; as a member without keys
	// of its own it enforces the cluster's.
	x = startNet(t, c, c.Host(3), []string{"--join", inviteLine(t, a.home)}, "SKULK_API_KEY=")
	netConverge(t, []*netNode{a, x}, 2, 60*time.Second)
	waitStatus(t, x, "", "GET", "/state", http.StatusUnauthorized)
	if code, b := x.doKey(aliceKey, "POST", "/v1/chat/completions", storyRequest(false, 64)); code != 200 || !strings.Contains(string(b), "Lily") {
		t.Fatalf("inference key through the joined member: %d %s", code, b)
	}
	if code, b := x.doKey(aliceKey, "DELETE", "/instance/"+inst, nil); code != http.StatusForbidden {
		t.Fatalf("an inference key deleted an instance: %d %s", code, b)
	}

	// A node of its own, with no key anywhere: loopback clients are served,
	// other addresses are told how to set a key or open the API.
	lone := startNet(t, c, c.Host(2), nil, "SKULK_API_KEY=", "SKULK_CLUSTER_KEY=")
	code, b := lone.doKey("", "GET", "/state", nil)
	if code != http.StatusForbidden || !strings.Contains(string(b), "SKULK_API_KEY") || !strings.Contains(string(b), "--api-open") {
		t.Fatalf("a keyless node answered a non-loopback client: %d %s", code, b)
	}
	resp, err := c.Host(2).HTTPClient().Get("http://127.0.0.1:52415/state")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a keyless node refused its loopback client: %d", resp.StatusCode)
	}
	if strings.Contains(a.proc.Output(), netAdminKey) || strings.Contains(a.proc.Output(), aliceKey) {
		t.Fatal("a key appears in the node's log")
	}
}

// TestNetnsRouteWalk walks every route of every API from a non-loopback
// address: without a key, with a wrong key, with an inference key (admin
// routes refuse it) and with the admin key; through the node that set the
// keys and through a member that has none of its own.
func TestNetnsRouteWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace route walk")
	}
	c := netns.New(t, netns.Options{Hosts: 2})
	a := startNet(t, c, c.Host(1), nil, "SKULK_INFERENCE_KEYS=alice="+aliceKey)
	b := startNet(t, c, c.Host(2), []string{"--bootstrap-peers", c.Host(1).Addr() + ":52416"}, "SKULK_API_KEY=")
	netConverge(t, []*netNode{a, b}, 2, 60*time.Second)
	placeReady(t, a, "stories260k")
	waitStatus(t, b, "", "GET", "/state", http.StatusUnauthorized)

	msgs := []map[string]any{{"role": "user", "content": "Once upon a time"}}
	routes := []struct {
		method, path string
		body         any
		admin        bool
		ok           int // the answer with the admin key
	}{
		{"POST", "/v1/chat/completions", storyRequest(false, 4), false, 200},
		{"POST", "/v1/completions", map[string]any{"model": "stories260k", "prompt": "Once", "max_tokens": 4, "temperature": 0}, false, 200},
		{"GET", "/v1/models", nil, false, 200},
		{"POST", "/v1/responses", map[string]any{"model": "stories260k", "input": "Once", "max_output_tokens": 4}, false, 200},
		{"POST", "/v1/embeddings", map[string]any{"model": "no-such-model", "input": "x"}, false, 404},
		{"POST", "/v1/messages", map[string]any{"model": "stories260k", "max_tokens": 4, "messages": msgs}, false, 200},
		{"POST", "/v1/messages/count_tokens", map[string]any{"model": "stories260k", "messages": msgs}, false, 200},
		{"POST", "/api/chat", map[string]any{"model": "stories260k", "messages": msgs, "stream": false, "options": map[string]any{"num_predict": 4}}, false, 200},
		{"POST", "/api/generate", map[string]any{"model": "stories260k", "prompt": "Once", "stream": false, "options": map[string]any{"num_predict": 4}}, false, 200},
		{"GET", "/api/tags", nil, false, 200},
		{"POST", "/api/show", map[string]any{"model": "stories260k"}, false, 200},
		{"GET", "/api/ps", nil, false, 200},
		{"GET", "/api/version", nil, false, 200},
		{"POST", "/api/embed", map[string]any{"model": "no-such-model", "input": "x"}, false, 404},
		{"POST", "/api/embeddings", map[string]any{"model": "no-such-model", "prompt": "x"}, false, 404},
		{"GET", "/state", nil, false, 200},
		{"GET", "/instance/previews?model_id=stories260k", nil, false, 200},
		{"GET", "/models", nil, false, 200},
		{"GET", "/v1/diagnostics/cluster", nil, false, 200},
		{"GET", "/models/requirements?model_id=stories260k&context=512", nil, false, 200},
		{"GET", "/models/stories260k", nil, false, 200},
		{"GET", "/metrics", nil, false, 200},
		{"GET", "/v1/diagnostics/cluster/timeline", nil, false, 200},
		{"GET", "/v1/diagnostics/node", nil, false, 200},
		{"GET", "/v1/traces/0123456789abcdef0123456789abcdef", nil, false, 404},
		{"GET", "/no-such-route", nil, false, 404}, // GET / is the dashboard's page, public (TestNetnsDashboard)
		{"POST", "/place_instance", map[string]any{"model_id": "no-such-model"}, true, 404},
		{"DELETE", "/instance/no-such-instance", nil, true, 404},
		{"POST", "/tracing", map[string]any{"enabled": false}, true, 200},
		{"POST", "/models/add", map[string]any{}, true, 400},
		{"POST", "/models/pull", map[string]any{"model_id": "no-such-model"}, true, 404},
		{"DELETE", "/models/no-such-model", nil, true, 404},
	}
	for _, via := range []*netNode{a, b} {
		for _, r := range routes {
			name := fmt.Sprintf("%s %s via %s", r.method, r.path, via.host.Name())
			for _, k := range []struct{ key, what string }{{"", "no key"}, {"wrong-key-123456", "a wrong key"}} {
				code, body := via.doKey(k.key, r.method, r.path, r.body)
				if code != http.StatusUnauthorized {
					t.Errorf("%s with %s: %d %s", name, k.what, code, body)
				}
				checkErrorShape(t, name, r.path, body)
			}
			code, body := via.doKey(aliceKey, r.method, r.path, r.body)
			switch {
			case r.admin && code != http.StatusForbidden:
				t.Errorf("%s with the inference key: %d %s, want 403", name, code, body)
			case r.admin && !strings.Contains(string(body), "admin key"):
				t.Errorf("%s with the inference key: %s does not name the admin key", name, body)
			case !r.admin && code != r.ok:
				t.Errorf("%s with the inference key: %d %s, want %d", name, code, body, r.ok)
			}
			if code, body := via.doKey(netAdminKey, r.method, r.path, r.body); code != r.ok {
				t.Errorf("%s with the admin key: %d %s, want %d", name, code, body, r.ok)
			}
		}
	}
}

// checkErrorShape checks that a refusal comes in the route's wire format.
func checkErrorShape(t *testing.T, name, path string, body []byte) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Errorf("%s: the refusal is not JSON: %s", name, body)
		return
	}
	switch {
	case strings.HasPrefix(path, "/v1/messages"):
		if doc["type"] != "error" {
			t.Errorf("%s: not Anthropic's error shape: %s", name, body)
		}
	case strings.HasPrefix(path, "/api/"):
		if _, ok := doc["error"].(string); !ok {
			t.Errorf("%s: not Ollama's error shape: %s", name, body)
		}
	default:
		if e, ok := doc["error"].(map[string]any); !ok || e["type"] != "authentication_error" {
			t.Errorf("%s: not OpenAI's error shape: %s", name, body)
		}
	}
}

// placeReady places a model through n and waits until it is ready.
func placeReady(t *testing.T, n *netNode, model string) string {
	t.Helper()
	code, b := n.do("POST", "/place_instance", map[string]any{"model_id": model})
	if code != 200 {
		t.Fatalf("place %s: %d %s", model, code, b)
	}
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(b, &placed)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s, ok := n.state(); ok && s.Instances[placed.InstanceID].Status == "ready" {
			return placed.InstanceID
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s never became ready", placed.InstanceID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStatus polls a route until it answers want.
func waitStatus(t *testing.T, n *netNode, key, method, path string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := n.doKey(key, method, path, nil)
		if code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s on %s: %d %s, want %d", method, path, n.host.Name(), code, b, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRefused waits until n's diagnostics list a refused peer at addr.
func waitRefused(t *testing.T, n *netNode, addr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		d, _ := n.diag()
		for _, r := range d.Refused {
			if strings.Split(r.Addr, ":")[0] == addr {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's diagnostics never listed %s as refused: %+v", n.host.Name(), addr, d.Refused)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
