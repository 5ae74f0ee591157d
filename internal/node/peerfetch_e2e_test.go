package node_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// llamaSplitShape is a small synthesized llama (untied head) with enough
// blocks for a split.
var llamaSplitShape = synth.Shape{Name: "llama", Arch: "llama", NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 2,
	HeadDim: 64, NFF: 512, NVocab: 1024, RopeBase: 1e4, CtxLen: 512}

// TestPipelinePeerFetch: a synthesized model imported on one node only and
// placed across two, with the Hub unreachable: the other stage's node
// fetches the header and its own tensors from the first (skulk/tensors/1),
// no more than its share plus 5%, the model is not listed as installed
// there, and the split answers exactly like the whole model.
func TestPipelinePeerFetch(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	for _, tc := range []struct {
		name  string
		shape synth.Shape
	}{
		{"untied", llamaSplitShape},
		{"tied", qwen3Shape},
	} {
		t.Run(tc.name, func(t *testing.T) { peerFetchCase(t, tc.shape) })
	}
}

func peerFetchCase(t *testing.T, shape synth.Shape) {
	a, b, src, id := peerPair(t, shape)
	// The State says A has the model (the import is reported as a
	// completed download); B is asked for nothing.
	waitFor(t, 10*time.Second, "the import in the State", func() bool {
		return downloadOutcome(a.node, id) == "completed: "
	})

	split := placeOn(t, a, id, 2)
	_, body := a.do("GET", "/state", nil)
	share, ranks := shareOf(t, body, split, nodeID(b.home), src)
	if ranks != 2 {
		t.Fatalf("the split has %d ranks, want 2: %s", ranks, body)
	}
	if share == 0 {
		t.Fatalf("node B holds no stage: %s", body)
	}
	fetched, _ := b.scrapeMetrics().value("skulk_model_download_bytes_total", map[string]string{"model": id})
	t.Logf("node B fetched %.0f bytes for a share of %d", fetched, share)
	if fetched <= 0 || fetched > float64(share)*1.05 {
		t.Fatalf("node B fetched %.0f bytes; its share is %d (at most +5%%)", fetched, share)
	}
	// A partial copy is not an installation: B's catalog does not list the
	// model as installed.
	code, body := b.do("GET", "/models", nil)
	var listing struct {
		Data []struct {
			ID        string `json:"model_id"`
			Installed bool   `json:"installed"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &listing); code != 200 || err != nil {
		t.Fatalf("GET /models on node B: %d %s", code, body)
	}
	for _, m := range listing.Data {
		if m.ID == id && m.Installed {
			t.Fatalf("node B lists %s as installed: %s", id, body)
		}
	}
	// Through A: B's API does not know the model (its catalog has no card).
	got := greedyCompletion(t, a, id)
	if code, body := a.do("DELETE", "/instance/"+split, nil); code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
	a.waitStatus(split, "gone")

	whole := placeOn(t, a, id, 1)
	if want := greedyCompletion(t, a, id); got != want {
		t.Fatalf("split: %q; whole: %q", got, want)
	}
	// Placed whole on B, the partial copy is completed: B fetches only the
	// rest, so everything it fetched is at most the whole model's share.
	_, body = a.do("GET", "/state", nil)
	if all, ranks := shareOf(t, body, whole, nodeID(b.home), src); ranks == 1 && all > 0 {
		total, _ := b.scrapeMetrics().value("skulk_model_download_bytes_total", map[string]string{"model": id})
		t.Logf("the whole model went to node B: it fetched %.0f bytes in all, the whole share is %d", total, all)
		if total > float64(all)*1.05 {
			t.Fatalf("node B fetched %.0f bytes in all for a model of %d: the partial copy was not reused", total, all)
		}
	}
}

// peerPair starts two loopback nodes whose Hub is a closed port, and
// imports a synthesized model of shape on the master (a) only: the master
// places with its own catalog. It returns the file imported and its id.
func peerPair(t *testing.T, shape synth.Shape) (a, b *clusterNode, src, id string) {
	t.Helper()
	src = filepath.Join(t.TempDir(), shape.Name+"-q8_0.gguf")
	if err := synth.WriteFile(src, shape, tensor.Q8_0, rand.New(rand.NewPCG(7, 8))); err != nil {
		t.Fatal(err)
	}
	id = shape.Name + "-peer"
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hub := "http://" + closed.Addr().String()
	closed.Close()
	gossip := []string{fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	var nodes []*clusterNode
	for i := range gossip {
		nodes = append(nodes, startClusterNode(t, t.TempDir(), gossip[i], gossip, "SKULK_IMPORT_DIRS="+filepath.Dir(src), "HF_ENDPOINT="+hub))
	}
	master := converged(t, nodes, 2, 30*time.Second)
	a, b = nodes[0], nodes[1]
	if nodeID(b.home) == master {
		a, b = b, a
	}
	if code, body := a.do("POST", "/models/import", map[string]any{"path": src, "id": id}); code != 200 {
		t.Fatalf("import: %d %s", code, body)
	}
	return a, b, src, id
}

// TestPipelinePeerFetchRefusesTamperedTensor: bytes of the installing
// node's file changed after its sums were recorded (size, mtime and inode
// kept, so its store still trusts the file) are refused by the fetching
// node: its stage fails with the verification error and never loads.
func TestPipelinePeerFetchRefusesTamperedTensor(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	a, b, src, id := peerPair(t, llamaSplitShape)
	// A byte in the first and in the last block: whichever rank B gets
	// holds one of them.
	files, _ := filepath.Glob(filepath.Join(a.home, "models", "local", "*", filepath.Base(src)))
	if len(files) != 1 {
		t.Fatalf("the imported file under %s: %v", a.home, files)
	}
	g, err := gguf.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var at []int64
	for _, name := range []string{"blk.0.ffn_up.weight", fmt.Sprintf("blk.%d.ffn_up.weight", llamaSplitShape.NLayer-1)} {
		ti, _ := g.Tensor(name)
		at = append(at, g.DataOffset+int64(ti.Offset)+ti.Size/2)
	}
	g.Close()
	fi, _ := os.Stat(files[0])
	f, err := os.OpenFile(files[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range at {
		var c [1]byte
		f.ReadAt(c[:], off)
		c[0] ^= 0x40
		f.WriteAt(c[:], off)
	}
	f.Close()
	os.Chtimes(files[0], fi.ModTime(), fi.ModTime())

	code, body := a.do("POST", "/place_instance", map[string]any{"model_id": id, "min_nodes": 2})
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	if err := json.Unmarshal(body, &placed); code != 200 || err != nil {
		t.Fatalf("place: %d %s", code, body)
	}
	reason := runnerFailure(t, a.node, placed.InstanceID)
	if !strings.Contains(reason, "tensorfetch") || !strings.Contains(reason, "sha256") || !strings.Contains(reason, "from node "+nodeID(a.home)) {
		t.Fatalf("the failed stage's reason %q, want the verification error", reason)
	}
	t.Logf("the stage on B failed: %s", reason)
	if fetched, _ := b.scrapeMetrics().value("skulk_model_download_bytes_total", map[string]string{"model": id}); fetched == 0 {
		t.Fatal("node B fetched nothing: the failure is not the verification")
	}
}

// placeOn places model through n with min_nodes and waits until it is ready.
func placeOn(t *testing.T, n *clusterNode, model string, minNodes int) string {
	t.Helper()
	code, b := n.do("POST", "/place_instance", map[string]any{"model_id": model, "min_nodes": minNodes})
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	if err := json.Unmarshal(b, &placed); code != 200 || err != nil {
		t.Fatalf("place (min_nodes %d): %d %s", minNodes, code, b)
	}
	n.waitStatus(placed.InstanceID, "ready")
	return placed.InstanceID
}

// greedyCompletion is the model's first 48 greedy tokens after a prompt.
func greedyCompletion(t *testing.T, n *clusterNode, model string) string {
	t.Helper()
	code, b := n.do("POST", "/v1/completions", map[string]any{"model": model, "prompt": "Once upon a time",
		"max_tokens": 48, "temperature": 0})
	var doc struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &doc); code != 200 || err != nil || len(doc.Choices) != 1 || doc.Choices[0].Text == "" {
		t.Fatalf("completion: %d %s", code, b)
	}
	return doc.Choices[0].Text
}

// stageShare is what a stage needs of the GGUF file at path, computed here
// from the file: its header and the tensors of blocks [start, end), the
// token embedding on the first rank, the output norm and head on the last
// (the embedding again when the head is tied), and anything outside blocks.
// shareOf reads instance inst's placement from the GET /state document
// body: its number of ranks, and the tensor bytes (header included) node
// holds of the GGUF file src (stageShare of its rank's range), 0 if none.
func shareOf(t *testing.T, body []byte, inst, node, src string) (share int64, ranks int) {
	t.Helper()
	var st struct {
		Instances map[string]struct {
			Placement []struct {
				Node           string `json:"node"`
				LayerStart     int    `json:"layer_start"`
				LayerEnd       int    `json:"layer_end"`
				HoldsEmbedding bool   `json:"holds_embedding"`
				HoldsHead      bool   `json:"holds_head"`
			} `json:"placement"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("GET /state: %v %s", err, body)
	}
	for _, sh := range st.Instances[inst].Placement {
		if sh.Node == node {
			share = stageShare(t, src, sh.LayerStart, sh.LayerEnd, sh.HoldsEmbedding, sh.HoldsHead)
			t.Logf("node %s holds layers %d-%d (embedding %v, head %v): %d bytes of the %d-byte file",
				node, sh.LayerStart, sh.LayerEnd, sh.HoldsEmbedding, sh.HoldsHead, share, fileSize(t, src))
		}
	}
	return share, len(st.Instances[inst].Placement)
}

func stageShare(t *testing.T, path string, start, end int, first, last bool) int64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, untied := f.Tensor("output.weight")
	share := f.DataOffset
	for _, ti := range f.Tensors {
		var blk int
		switch {
		case strings.HasPrefix(ti.Name, "blk."):
			if _, err := fmt.Sscanf(ti.Name, "blk.%d.", &blk); err != nil {
				t.Fatalf("tensor %s", ti.Name)
			}
			if blk >= start && blk < end {
				share += ti.Size
			}
		case ti.Name == "token_embd.weight":
			if first || (last && !untied) {
				share += ti.Size
			}
		case ti.Name == "output.weight" || ti.Name == "output_norm.weight":
			if last {
				share += ti.Size
			}
		default:
			share += ti.Size
		}
	}
	return share
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
