package node_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/testkit/hubstandin"
)

// TestModelImportedOnFollowerIsClusterState: a model imported on a node
// that is not the master, with the Hub unreachable, is a committed card
// every node knows: the other nodes list it at once, the import's node
// places it through its own API across the two other nodes only (they
// fetch their stages' tensors from it), every node's API serves it, its
// removal is refused while it is placed, and once removed through the
// import's node no node knows it any more.
func TestModelImportedOnFollowerIsClusterState(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	src := filepath.Join(t.TempDir(), "llama-shared-q8_0.gguf")
	if err := synth.WriteFile(src, llamaSplitShape, tensor.Q8_0, rand.New(rand.NewPCG(11, 12))); err != nil {
		t.Fatal(err)
	}
	const id = "llama-shared"
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hub := "http://" + closed.Addr().String()
	closed.Close()
	var gossip []string
	for range 3 {
		gossip = append(gossip, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	}
	var nodes []*clusterNode
	for i := range gossip {
		nodes = append(nodes, startClusterNode(t, t.TempDir(), gossip[i], gossip, "SKULK_IMPORT_DIRS="+filepath.Dir(src), "HF_ENDPOINT="+hub))
	}
	master := converged(t, nodes, 3, 45*time.Second)
	// f imports; o1 and o2 are the others, the master among them.
	var f *clusterNode
	var others []*clusterNode
	for _, n := range nodes {
		if f == nil && nodeID(n.home) != master {
			f = n
			continue
		}
		others = append(others, n)
	}
	o1, o2 := others[0], others[1]
	fID := nodeID(f.home)

	if code, body := f.do("POST", "/models/import", map[string]any{"path": src, "id": id}); code != 200 {
		t.Fatalf("import on the follower: %d %s", code, body)
	}
	// Acknowledged means committed: the master (among the others) applied
	// it before the answer; the third node applies it within moments.
	for _, n := range others {
		waitFor(t, 5*time.Second, "the card in "+nodeID(n.home)+"'s catalog", func() bool {
			m, ok := n.catalogEntries()[id]
			return ok && !m.Installed
		})
	}
	waitFor(t, 10*time.Second, "the import's node named as the model's holder", func() bool {
		_, m := o1.model(id)
		return slices.Equal(m.HeldBy, []string{fID})
	})

	// Placed through the import's node, across the two others only.
	code, body := f.do("POST", "/place_instance", map[string]any{"model_id": id, "min_nodes": 2, "excluded_nodes": []string{fID}})
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	if err := json.Unmarshal(body, &placed); code != 200 || err != nil {
		t.Fatalf("place through the import's node: %d %s", code, body)
	}
	f.waitStatus(placed.InstanceID, "ready")
	_, body = f.do("GET", "/state", nil)
	var held []string
	for _, n := range nodes {
		if share, _ := shareOf(t, body, placed.InstanceID, nodeID(n.home), src); share > 0 {
			held = append(held, nodeID(n.home))
		}
	}
	slices.Sort(held)
	want := []string{nodeID(o1.home), nodeID(o2.home)}
	slices.Sort(want)
	if !slices.Equal(held, want) {
		t.Fatalf("stages on %v, want on the two other nodes %v", held, want)
	}
	for _, n := range others {
		if fetched, _ := n.scrapeMetrics().value("skulk_model_download_bytes_total", map[string]string{"model": id}); fetched <= 0 {
			t.Fatalf("node %s fetched no tensors of its stage", nodeID(n.home))
		}
	}
	// Every node's listings name it, and every node's API serves it, with
	// the same greedy answer.
	for _, path := range []string{"/v1/models", "/api/tags", "/models/" + id} {
		if code, body := o2.do("GET", path, nil); code != 200 || !strings.Contains(string(body), `"`+id+`"`) {
			t.Fatalf("GET %s on %s: %d %s", path, nodeID(o2.home), code, body)
		}
	}
	got := greedyCompletion(t, f, id)
	for _, n := range others {
		if other := greedyCompletion(t, n, id); other != got {
			t.Fatalf("node %s answers %q, the import's node %q", nodeID(n.home), other, got)
		}
	}

	// Removal is refused while placed, whichever node is asked.
	if code, body := o2.do("DELETE", "/models/"+id+"?files=true", nil); code != 409 {
		t.Fatalf("rm while placed: %d %s, want 409", code, body)
	}
	if code, body := f.do("DELETE", "/instance/"+placed.InstanceID, nil); code != 200 {
		t.Fatalf("delete the instance: %d %s", code, body)
	}
	f.waitStatus(placed.InstanceID, "gone")
	if code, body := f.do("DELETE", "/models/"+id+"?files=true", nil); code != 200 {
		t.Fatalf("rm through the import's node: %d %s", code, body)
	}
	waitFor(t, 10*time.Second, "the import's node no longer named as a holder", func() bool {
		return strings.HasPrefix(downloadOutcome(o1.node, id), "failed: the weights were removed")
	})
	for _, n := range nodes {
		waitFor(t, 5*time.Second, "the card gone from "+nodeID(n.home)+"'s catalog", func() bool {
			_, ok := n.catalogEntries()[id]
			return !ok
		})
	}
	if code, body := o1.do("POST", "/place_instance", map[string]any{"model_id": id}); code != 404 {
		t.Fatalf("place once removed: %d %s, want 404", code, body)
	}
}

// TestModelAddedOnFollowerFromHub: a card added from the Hub on a node that
// is not the master is placed through the master's API on the master
// alone, which downloads the weights itself (no member has them), and is
// served through the node that added it.
func TestModelAddedOnFollowerFromHub(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	hubSrv := hubstandin.New(t)
	hubSrv.AddRepo("skulk-test/stories-GGUF", "", hubstandin.File{Path: "stories-Q8_0.gguf", Local: storiesFile, LFS: true})
	gossip := []string{fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	var nodes []*clusterNode
	for i := range gossip {
		nodes = append(nodes, startClusterNode(t, t.TempDir(), gossip[i], gossip, "HF_ENDPOINT="+hubSrv.URL(), "HF_TOKEN="))
	}
	master := converged(t, nodes, 2, 30*time.Second)
	f, m := nodes[0], nodes[1]
	if nodeID(f.home) == master {
		f, m = m, f
	}
	const id = "stories-q8_0"
	if code, body := f.do("POST", "/models/add", map[string]any{"ref": "hf:skulk-test/stories-GGUF"}); code != 200 {
		t.Fatalf("add on the follower: %d %s", code, body)
	}
	if e, ok := m.catalogEntries()[id]; !ok || e.Installed || e.Revision == "" {
		t.Fatalf("the master's catalog after the add: %+v (listed %v)", e, ok)
	}
	// Another card under the same id is refused on any node.
	if code, body := m.do("POST", "/models/add", map[string]any{"ref": "hf:skulk-test/stories-GGUF", "id": id}); code != 409 {
		t.Fatalf("a second add on the master: %d %s, want 409", code, body)
	}
	code, body := m.do("POST", "/place_instance", map[string]any{"model_id": id, "excluded_nodes": []string{nodeID(f.home)}})
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	if err := json.Unmarshal(body, &placed); code != 200 || err != nil {
		t.Fatalf("place through the master: %d %s", code, body)
	}
	m.waitStatus(placed.InstanceID, "ready")
	if e := m.catalogEntries()[id]; !e.Installed {
		t.Fatalf("the master did not install the weights it runs: %+v", e)
	}
	if got, want := greedyCompletion(t, f, id), greedyCompletion(t, m, id); got != want {
		t.Fatalf("through the follower %q, through the master %q", got, want)
	}
}
