//go:build linux

package node_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/testkit/netns"
)

// TestNetnsPipelinePeerFetch: on two hosts with no Hub to reach, a
// synthesized model imported on the master's host only is placed across
// both; the other host's stage fetches the header and its own tensors from
// the first (at most its share plus 5%), and the split's greedy output
// equals the model's placed whole.
func TestNetnsPipelinePeerFetch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the network-namespace pipeline test")
	}
	c := netns.New(t, netns.Options{Hosts: 2})
	shape := llamaSplitShape
	src := filepath.Join(t.TempDir(), "peer-q8_0.gguf")
	if err := synth.WriteFile(src, shape, tensor.Q8_0, rand.New(rand.NewPCG(9, 10))); err != nil {
		t.Fatal(err)
	}
	const id = "peer-q8_0"
	env := []string{"SKULK_IMPORT_DIRS=" + filepath.Dir(src), "HF_ENDPOINT=http://" + c.Host(1).Addr() + ":9"}
	first := startNet(t, c, c.Host(1), []string{"--no-mdns"}, env...)
	second := startNet(t, c, c.Host(2), []string{"--no-mdns", "--bootstrap-peers", c.Host(1).Addr() + ":52416"}, env...)
	nodes := []*netNode{first, second}
	master, _ := netConverge(t, nodes, 2, 60*time.Second)
	a, rest := byID(nodes, master)
	b := rest[0]
	if code, body := a.do("POST", "/models/import", map[string]any{"path": src, "id": id}); code != 200 {
		t.Fatalf("import on %s: %d %s", a.host.Name(), code, body)
	}

	place := func(minNodes int) string {
		t.Helper()
		code, body := a.do("POST", "/place_instance", map[string]any{"model_id": id, "min_nodes": minNodes})
		var placed struct {
			InstanceID string `json:"instance_id"`
		}
		if err := json.Unmarshal(body, &placed); code != 200 || err != nil {
			t.Fatalf("place (min_nodes %d): %d %s", minNodes, code, body)
		}
		waitInstanceReady(t, a, placed.InstanceID, 60*time.Second)
		return placed.InstanceID
	}
	complete := func() string {
		t.Helper()
		code, body := a.do("POST", "/v1/completions", map[string]any{"model": id, "prompt": "Once upon a time", "max_tokens": 48, "temperature": 0})
		var doc struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &doc); code != 200 || err != nil || len(doc.Choices) != 1 || doc.Choices[0].Text == "" {
			t.Fatalf("completion: %d %s", code, body)
		}
		return doc.Choices[0].Text
	}

	split := place(2)
	_, body := a.do("GET", "/state", nil)
	share, _ := shareOf(t, body, split, b.id(), src)
	fetched := netDownloadBytes(t, b, id)
	t.Logf("%s fetched %d bytes from %s; its share is %d of %d", b.host.Name(), fetched, a.host.Name(), share, fileSize(t, src))
	if share == 0 || fetched <= 0 || float64(fetched) > float64(share)*1.05 {
		t.Fatalf("%s fetched %d bytes for a share of %d (at most +5%%)", b.host.Name(), fetched, share)
	}
	got := complete()
	if code, body := a.do("DELETE", "/instance/"+split, nil); code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
	place(1)
	if want := complete(); got != want {
		t.Fatalf("split: %q; whole: %q", got, want)
	}
}

// netDownloadBytes reads skulk_model_download_bytes_total of model from the
// node's /metrics.
func netDownloadBytes(t *testing.T, n *netNode, model string) int64 {
	t.Helper()
	code, body := n.do("GET", "/metrics", nil)
	if code != 200 {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	want := `skulk_model_download_bytes_total{model="` + model + `"} `
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %q", sc.Text())
			}
			return int64(f)
		}
	}
	return 0
}
