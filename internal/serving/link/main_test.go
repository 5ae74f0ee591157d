package link

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/serving/pipeline"
)

// testFile returns testdata/rel at the repository root, or skips.
func testFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "..", "testdata", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is absent", p)
	}
	return p
}

// unixPair returns both ends of a fresh Unix-domain stream connection.
func unixPair(t testing.TB) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err = net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	return a, b
}

// waitFor polls cond until it holds or d passes.
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

// storiesModel opens testdata's stories260K: its file, its configuration
// and the reference prompts of testdata/reference/stories260K.json.
func storiesModel(t testing.TB) (path string, f *gguf.File, cfg model.Config, prompts [][]int32) {
	t.Helper()
	path = testFile(t, "models/stories260K.gguf")
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
	for _, c := range ref.Generation.Cases {
		prompts = append(prompts, c.PromptIDs)
	}
	if f, err = gguf.Open(path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if cfg, err = model.ReadConfig(f); err != nil {
		t.Fatal(err)
	}
	return path, f, cfg, prompts
}

// reference generates greedily with the engine's own loop on the whole
// model in one shard: what a pipeline must equal.
func reference(t testing.TB, path string, prompt []int32, maxTokens int) []int32 {
	t.Helper()
	m, err := engine.Open(path, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var out []int32
	_, err = m.Generate(t.Context(), prompt, engine.GenerateParams{MaxTokens: maxTokens}, func(tok engine.Token) error {
		if tok.ID >= 0 {
			out = append(out, tok.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// generate runs one request through p and returns its tokens.
func generate(t testing.TB, p *pipeline.Pipeline, req pipeline.Request) []int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	q, err := p.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := q.All(ctx)
	if err != nil {
		t.Fatalf("%v after %d tokens", err, len(toks))
	}
	return toks
}

func equalTokens(t testing.TB, what string, got, want []int32) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %d tokens, single shard %d\n got %v\nwant %v", what, len(got), len(want), got, want)
	}
}
