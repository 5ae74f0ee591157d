package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/catalog"
	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/control/eventlog"
	"github.com/skulk/skulk/internal/control/placement"
	"github.com/skulk/skulk/internal/control/plane"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/ids"
	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner"
	"github.com/skulk/skulk/internal/serving/runner/client"
	"github.com/skulk/skulk/internal/serving/runner/proto"
	"github.com/skulk/skulk/internal/serving/worker"
)

// runnerEnv makes the test binary, re-executed, the runner child.
const runnerEnv = "GATEWAY_TEST_RUNNER"

func TestMain(m *testing.M) {
	if os.Getenv(runnerEnv) == "1" {
		if err := runner.Main(context.Background(), os.Stdin, os.Stdout, os.Stderr, nil); err != nil {
			fmt.Fprintln(os.Stderr, "runner:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// clientRunner adapts client.Client to the worker's Runner, as the node
// does.
type clientRunner struct{ c *client.Client }

func (r clientRunner) Load(ctx context.Context, spec proto.LoadSpec) (proto.Status, error) {
	return r.c.Load(ctx, spec)
}

func (r clientRunner) Generate(ctx context.Context, task string, req request.Request) (<-chan request.Chunk, error) {
	return r.c.Generate(ctx, task, req)
}

func (r clientRunner) Embed(ctx context.Context, task string, req request.EmbedRequest) (request.EmbedResult, error) {
	return r.c.Embed(ctx, task, req)
}

func (r clientRunner) Exited() <-chan struct{}         { return r.c.Done() }
func (r clientRunner) Err() error                      { return nil }
func (r clientRunner) Close(ctx context.Context) error { return r.c.Close(ctx) }

// bertCard describes synth-bert for placement (catalog.CardFromGGUF reads
// decoder shapes only).
func bertCard(t *testing.T, path string) catalog.Card {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := func(k string) int {
		v, ok := f.Uint("bert." + k)
		if !ok {
			t.Fatalf("synth-bert lacks bert.%s", k)
		}
		return int(v)
	}
	c := catalog.Card{ID: "synth-bert", Arch: "bert", Layers: u("block_count"), HiddenSize: u("embedding_length"), Heads: u("attention.head_count"),
		ContextLength: u("context_length"), Tasks: []string{"embeddings"}, Capabilities: []catalog.Capability{"embeddings"}, CompatibleBackends: []string{"native-cpu"}}
	c.KVHeads, c.HeadDim = c.Heads, c.HiddenSize/c.Heads
	for _, ti := range f.Tensors {
		c.StorageBytes += ti.Size
	}
	for range c.Layers {
		c.LayerBytes = append(c.LayerBytes, c.StorageBytes/int64(c.Layers))
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

type cards []catalog.Card

func (c cards) Cards() ([]catalog.Card, error) { return c, nil }

// cluster is one node's control plane, worker and gateway, in process, with
// real runner subprocesses.
func cluster(t *testing.T) (*Gateway, string) {
	t.Helper()
	bert, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "shared", "models", "synthetic", "synth-bert.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bert); err != nil {
		t.Skipf("skipping: %s is absent (the shared models are not checked out)", bert)
	}
	stories, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := catalog.BuiltinCard()
	if err != nil {
		t.Fatal(err)
	}
	cat, errs := catalog.Build(cards{bertCard(t, bert), builtin})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	paths := map[ids.ModelID]string{"synth-bert": bert, ids.ModelID(builtin.ID): stories}
	const node = ids.NodeID("node-a")
	var n atomic.Int64
	newID := func() string { return fmt.Sprintf("id-%04d", n.Add(1)) }

	log, err := eventlog.Open(t.TempDir(), eventlog.Options{FreeSpaceFloor: eventlog.NoFloor})
	if err != nil {
		t.Fatal(err)
	}
	nodes := func() []placement.Node {
		return []placement.Node{{ID: string(node), TotalBytes: 16 << 30, AvailableBytes: 8 << 30, Backends: []string{"native-cpu"}}}
	}
	m, err := plane.New(plane.Config{Node: node, Log: log, Found: true, StartedAt: time.Now(), Nodes: nodes,
		Card: func(id ids.ModelID) (catalog.Card, bool) { return cat.Get(string(id)) }})
	if err != nil {
		t.Fatal(err)
	}
	var w *worker.Worker
	serve := func(ctx context.Context, inst ids.InstanceID, task ids.TaskID, p request.TaskPayload) (<-chan request.Chunk, error) {
		return w.Serve(ctx, inst, task, p)
	}
	gw := New(Config{Node: node, Master: m, Local: serve, Catalog: func() *catalog.Catalog { return cat }, Nodes: nodes, NewID: newID})
	w = worker.New(worker.Config{Node: node, Master: m, Threads: 1, Now: time.Now, NewID: newID,
		Spawn: func(ctx context.Context, name string) (worker.Runner, error) {
			c, err := client.Start(ctx, supervise.Spec{Args: []string{"-test.run=^$"}, Env: []string{runnerEnv + "=1"}}, client.Options{})
			if err != nil {
				return nil, err
			}
			return clientRunner{c}, nil
		},
		Resolve: func(ctx context.Context, id ids.ModelID, _ event.Shard, _ func()) (worker.Model, error) {
			p, ok := paths[id]
			if !ok {
				return worker.Model{}, fmt.Errorf("no weights for %s", id)
			}
			return worker.Model{Path: p}, nil
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	mdone, wdone := make(chan error, 1), make(chan error, 1)
	go func() { mdone <- m.Run(ctx) }()
	go func() { wdone <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-wdone
		<-mdone
		log.Close()
	})
	for deadline := time.Now().Add(10 * time.Second); !m.IsMaster(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the control plane did not elect itself")
		}
	}
	for _, id := range []string{"synth-bert", builtin.ID} {
		if _, err := gw.Place(t.Context(), request.PlaceRequest{ModelID: ids.ModelID(id)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ms, err := gw.Models(t.Context())
		if err == nil && len(ms) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the instances did not become ready: %v %v", ms, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return gw, builtin.ID
}

// TestEmbedThroughCluster runs embedding requests through the gateway, the
// master, the worker and a real runner subprocess on synth-bert, and
// compares the vectors with llama.cpp's.
func TestEmbedThroughCluster(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "synthetic", "synth-bert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		NEmbd     int `json:"n_embd"`
		Tolerance struct {
			Table struct {
				Embedding float64 `json:"embedding_max_abs"`
			} `json:"engine_with_ggml_f16_gelu_table"`
		} `json:"tolerance"`
		Texts []struct {
			Name      string        `json:"name"`
			Text      string        `json:"text"`
			IDs       []int32       `json:"ids"`
			Embedding []json.Number `json:"embedding"`
		} `json:"texts"`
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	gw, decoder := cluster(t)
	var inputs []string
	tokens := 0
	for _, tc := range ref.Texts {
		inputs = append(inputs, tc.Text)
		tokens += len(tc.IDs)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := gw.Embed(ctx, request.EmbedRequest{Model: "synth-bert", Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Embeddings) != len(inputs) || res.PromptTokens != tokens {
		t.Fatalf("%d vectors and %d tokens, want %d and %d", len(res.Embeddings), res.PromptTokens, len(inputs), tokens)
	}
	for i, tc := range ref.Texts {
		var worst float64
		for j, s := range tc.Embedding {
			w, _ := strconv.ParseFloat(string(s), 32)
			worst = max(worst, math.Abs(float64(res.Embeddings[i][j])-w))
		}
		if len(res.Embeddings[i]) != ref.NEmbd || worst > ref.Tolerance.Table.Embedding {
			t.Errorf("%s: %d dimensions, max |Δ| %.3g against llama.cpp (bound %g)", tc.Name, len(res.Embeddings[i]), worst, ref.Tolerance.Table.Embedding)
		}
	}

	tests := []struct {
		name  string
		req   request.EmbedRequest
		class fault.Class
		param string
		msg   string
	}{
		{name: "other_dimensions", req: request.EmbedRequest{Model: "synth-bert", Inputs: []string{"a"}, Dimensions: 3}, class: fault.ClassInvalid, param: "dimensions", msg: "dimensional"},
		{name: "decoder", req: request.EmbedRequest{Model: decoder, Inputs: []string{"a"}}, class: fault.ClassInvalid, msg: "this model does not produce embeddings"},
		{name: "unknown_model", req: request.EmbedRequest{Model: "nope", Inputs: []string{"a"}}, class: fault.ClassNotFound, param: "model", msg: "unknown model"},
		{name: "no_inputs", req: request.EmbedRequest{Model: "synth-bert"}, class: fault.ClassInvalid, param: "input", msg: "at least one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gw.Embed(ctx, tt.req)
			e, ok := errors.AsType[*fault.Error](err)
			if !ok || e.Class != tt.class || e.Param != tt.param || !strings.Contains(e.Message, tt.msg) {
				t.Fatalf("error %#v, want %s on %q containing %q", err, tt.class, tt.param, tt.msg)
			}
		})
	}
	t.Run("generate_on_encoder", func(t *testing.T) {
		chunks, err := gw.Generate(ctx, request.Request{Model: "synth-bert", Prompt: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		var last request.Chunk
		for c := range chunks {
			last = c
		}
		if last.Kind != request.ChunkError || last.Error.Class != fault.ClassInvalid || !strings.Contains(last.Error.Message, "is an embedding model") {
			t.Fatalf("last chunk %+v, want an invalid_request error naming the embedding model", last)
		}
	})
}
