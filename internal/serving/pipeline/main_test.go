package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// tmp holds files synthesized for the life of the test binary.
var tmp struct {
	once sync.Once
	dir  string
	err  error
	mu   sync.Mutex
	made map[string]string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tmp.dir != "" {
		os.RemoveAll(tmp.dir)
	}
	os.Exit(code)
}

// testFile returns testdata/rel at the repository root, or skips.
func testFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "testdata", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is absent", p)
	}
	return p
}

// synthModel writes a random model of shape s (once per test binary).
func synthModel(t testing.TB, s synth.Shape, typ tensor.Type) string {
	t.Helper()
	tmp.once.Do(func() {
		tmp.dir, tmp.err = os.MkdirTemp("", "skulk-pipeline-test-")
		tmp.made = map[string]string{}
	})
	if tmp.err != nil {
		t.Fatal(tmp.err)
	}
	tmp.mu.Lock()
	defer tmp.mu.Unlock()
	key := fmt.Sprintf("%s-%d-%s", s.Name, s.NLayer, typ)
	if p, ok := tmp.made[key]; ok {
		return p
	}
	w, err := synth.Build(s, typ, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(tmp.dir, key+".gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	tmp.made[key] = p
	return p
}

// qwen3Shape is a small qwen3 (q/k norms, neox rope, tied head) with
// enough blocks for three stages.
var qwen3Shape = synth.Shape{Name: "qwen3", Arch: "qwen3", NEmbd: 256, NLayer: 4, NHead: 4, NHeadKV: 2,
	HeadDim: 64, NFF: 512, NVocab: 1024, RopeBase: 1e6, Tied: true, CtxLen: 512}

// storiesPrompts are the reference prompts of testdata/reference/stories260K.json.
func storiesPrompts(t testing.TB) [][]int32 {
	t.Helper()
	var ref struct {
		Generation struct {
			Cases []struct {
				PromptIDs []int32 `json:"prompt_ids"`
			} `json:"cases"`
		} `json:"generation"`
	}
	b, err := os.ReadFile(testFile(t, "reference/stories260K.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	var out [][]int32
	for _, c := range ref.Generation.Cases {
		out = append(out, c.PromptIDs)
	}
	if len(out) == 0 {
		t.Fatal("no reference prompts")
	}
	return out
}

// randomPrompts returns prompts of the given lengths over ids [3, vocab).
func randomPrompts(seed uint64, vocab int, lengths ...int) [][]int32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([][]int32, len(lengths))
	for i, n := range lengths {
		out[i] = make([]int32, n)
		for j := range out[i] {
			out[i][j] = 3 + rng.Int32N(int32(vocab-3))
		}
	}
	return out
}

// refCache memoizes single-shard generations by model, prompt and settings.
var refCache sync.Map

// reference generates with the engine's own loop (engine.Model.Generate)
// on the whole model in one shard: what the pipeline must equal.
func reference(t testing.TB, path string, prompt []int32, maxTokens int, p sample.Params) []int32 {
	t.Helper()
	key := fmt.Sprint(path, prompt, maxTokens, p)
	if v, ok := refCache.Load(key); ok {
		return v.([]int32)
	}
	m, err := engine.Open(path, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out []int32
	_, err = m.Generate(t.Context(), prompt, engine.GenerateParams{MaxTokens: maxTokens, Sample: p}, func(tok engine.Token) error {
		if tok.ID >= 0 {
			out = append(out, tok.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	refCache.Store(key, out)
	return out
}

// testPipeline opens path and runs it split into n even stages.
func testPipeline(t testing.TB, path string, n int, opt Options) *Pipeline {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := engine.OpenTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Head.EndOfGeneration == nil {
		opt.Head.EndOfGeneration = tok.IsEOG
	}
	if opt.Threads == 0 {
		opt.Threads = 1
	}
	cfgN := nLayer(t, f)
	p, err := New(f, Split(cfgN, n), opt)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		f.Close()
	})
	return p
}

func nLayer(t testing.TB, f *gguf.File) int {
	t.Helper()
	cfg, err := model.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.NLayer
}

// generate submits every request at once and collects each sequence's tokens.
func generate(t testing.TB, p *Pipeline, reqs []Request) [][]int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	seqs := make([]*Sequence, len(reqs))
	for i, r := range reqs {
		q, err := p.Submit(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		seqs[i] = q
	}
	out := make([][]int32, len(reqs))
	for i, q := range seqs {
		toks, err := q.All(ctx)
		if err != nil {
			t.Fatalf("sequence %d: %v after %d tokens", i, err, len(toks))
		}
		out[i] = toks
	}
	return out
}

// waitFor polls cond until it holds or d passes (the one polling helper).
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkGoroutines fails when goroutines started after base outlive d.
func checkGoroutines(t testing.TB, base int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func equalTokens(t testing.TB, what string, got, want []int32) {
	t.Helper()
	if !slices.Equal(got, want) {
		k := 0
		for k < min(len(got), len(want)) && got[k] == want[k] {
			k++
		}
		t.Fatalf("%s: %d tokens, single shard %d; first difference at %d\n got %v\nwant %v", what, len(got), len(want), k, got, want)
	}
}
