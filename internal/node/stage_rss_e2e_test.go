package node_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// stageShape is a synthesized llama whose layers dominate its weights: 8
// layers × 1024 wide (12 MB each in Q8_0, 96 MB in all) and a 1024-token
// vocabulary (a 1.1 MB embedding on rank 0 and as much again of output head
// on rank 1), with a 512-token window so the KV stays a few MB. The test
// runs it untied and tied (the last rank's head is then the embedding).
var stageShape = synth.Shape{Name: "stage", Arch: "llama", NEmbd: 1024, NLayer: 8, NHead: 16, NHeadKV: 4,
	NFF: 2816, NVocab: 1024, RopeBase: 10000, CtxLen: 512}

// TestPipelineStageRSS is the acceptance test "resident memory of each
// stage's runner is at most its share of the weights plus its KV and 20%":
// a synthesized model imported on both nodes of a 2-node loopback cluster is
// placed with min_nodes 2 and warmed with a completion, and each rank's
// runner VmRSS must be at most (its weights + KV + runner overhead) × 1.2,
// those parts being the width-2 preview's per-rank estimate, whose layer
// ranges must be the ones the State placed. To show the runner holds its
// share and not the whole file, each rank's RSS must also be below the
// whole model's weight bytes (see below).
func TestPipelineStageRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the multi-node cluster test")
	}
	// SKULK_STAGE_RSS_MODEL=FILE measures a given model the same way (the
	// issue's figure is for a 1b-shape Q8_0: `skulk dev synth --shape 1b
	// --type Q8_0`, 1.1 GB, too big to write in every test run).
	if src := os.Getenv("SKULK_STAGE_RSS_MODEL"); src != "" {
		t.Run("given", func(t *testing.T) { stageRSS(t, src) })
		return
	}
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			shape := stageShape
			shape.Tied = tied
			src := filepath.Join(t.TempDir(), "stage-q8_0.gguf")
			began := time.Now()
			if err := synth.WriteFile(src, shape, tensor.Q8_0, rand.New(rand.NewPCG(3, 4))); err != nil {
				t.Fatal(err)
			}
			t.Logf("synthesized %s in %v", src, time.Since(began))
			stageRSS(t, src)
		})
	}
}

func stageRSS(t *testing.T, src string) {

	const id = "stage-q8_0"
	nodes := importedPair(t, src, id)

	type estimate struct {
		Weights  int64 `json:"weights"`
		KV       int64 `json:"kv"`
		Overhead int64 `json:"overhead"`
		Floor    int64 `json:"floor"`
		Total    int64 `json:"total"`
	}
	type preview struct {
		Width          int `json:"width"`
		DefaultContext int `json:"default_context"`
		Ranks          []struct {
			Start int `json:"start"`
			End   int `json:"end"`
		} `json:"ranks"`
		PerNode []estimate `json:"per_node"`
	}
	var pv struct {
		Previews []preview `json:"previews"`
	}
	var one, two *preview
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, b := nodes[0].do("GET", "/instance/previews?model_id="+id, nil)
		if err := json.Unmarshal(b, &pv); code != 200 || err != nil {
			t.Fatalf("previews: %d %s", code, b)
		}
		one, two = nil, nil
		for i := range pv.Previews {
			switch p := &pv.Previews[i]; p.Width {
			case 1:
				one = p
			case 2:
				two = p
			}
		}
		if one != nil && two != nil && len(two.PerNode) == 2 && len(two.Ranks) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no width 1 and 2 previews: %s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}

	code, b := nodes[0].do("POST", "/place_instance", map[string]any{"model_id": id, "min_nodes": 2, "context_tokens": two.DefaultContext})
	var placed struct {
		InstanceID string `json:"instance_id"`
	}
	if err := json.Unmarshal(b, &placed); code != 200 || err != nil {
		t.Fatalf("place: %d %s", code, b)
	}
	for _, n := range nodes {
		n.waitStatus(placed.InstanceID, "ready")
	}
	if code, b := nodes[0].do("POST", "/v1/completions", map[string]any{"model": id, "prompt": "Once upon a time", "max_tokens": 8}); code != 200 {
		t.Fatalf("warm-up: %d %s", code, b)
	}

	_, b = nodes[0].do("GET", "/state", nil)
	var st struct {
		Instances map[string]struct {
			ContextTokens int `json:"context_tokens"`
			Placement     []struct {
				Node       string `json:"node"`
				LayerStart int    `json:"layer_start"`
				LayerEnd   int    `json:"layer_end"`
			} `json:"placement"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	inst := st.Instances[placed.InstanceID]
	if len(inst.Placement) != 2 || inst.ContextTokens != two.DefaultContext {
		t.Fatalf("instance %s: %s", placed.InstanceID, b)
	}

	// A runner holding the whole file has every weight byte resident once a
	// decode has read them all (read into memory or mmapped and touched), so
	// its RSS is at least the whole model's weights, one.PerNode[0].Weights.
	// A rank's runner holding its share has its share, the process and its
	// KV: here 49 MB + about 20 MB + 2 MB ≈ 71-73 MB measured, 25 MB under
	// the 98 MB whole. So RSS < whole weights is a line the whole-file case
	// cannot pass and the share case passes with room to spare. (The other
	// candidate, the one-node estimate minus a third of the weights, is
	// 0.77 × 98 + 32 MiB + 4 MB KV ≈ 113 MB, which a whole-file runner whose
	// process and cache took under ~15 MB would also pass: no proof, so it
	// is only logged.)
	whole := one.PerNode[0]
	t.Logf("whole model: weights %.1f MB; one-node estimate %.1f MB (minus a third of the weights: %.1f MB); window %d",
		mb(whole.Weights), mb(whole.Total), mb(whole.Total-whole.Weights/3), two.DefaultContext)
	for r, sh := range inst.Placement {
		if sh.LayerStart != two.Ranks[r].Start || sh.LayerEnd != two.Ranks[r].End {
			t.Fatalf("rank %d placed on layers [%d, %d), the width-2 preview has [%d, %d)", r, sh.LayerStart, sh.LayerEnd, two.Ranks[r].Start, two.Ranks[r].End)
		}
		var on *clusterNode
		for _, n := range nodes {
			if nodeID(n.home) == sh.Node {
				on = n
			}
		}
		if on == nil {
			t.Fatalf("rank %d on unknown node %s", r, sh.Node)
		}
		rss := vmRSS(t, runnerOf(t, on.node, placed.InstanceID))
		e := two.PerNode[r]
		bound := (e.Weights + e.KV + e.Floor) * 12 / 10
		t.Logf("rank %d layers [%d, %d) on %s: VmRSS %.1f MB; share %.1f MB, KV %.1f MB, runner overhead %.1f MB; bound (share+KV+overhead)×1.2 = %.1f MB (estimate %.1f MB); whole weights %.1f MB",
			r, sh.LayerStart, sh.LayerEnd, sh.Node, mb(rss), mb(e.Weights), mb(e.KV), mb(e.Floor), mb(bound), mb(e.Total), mb(whole.Weights))
		if rss > bound {
			t.Errorf("rank %d: VmRSS %d above (share %d + KV %d + overhead %d) × 1.2 = %d", r, rss, e.Weights, e.KV, e.Floor, bound)
		}
		if rss >= whole.Weights {
			t.Errorf("rank %d: VmRSS %d not below the whole model's weights %d: it holds more than its share %d", r, rss, whole.Weights, e.Weights)
		}
	}
}

func mb(b int64) float64 { return float64(b) / 1e6 }
