package encoder

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// sharedFile returns a file under ../shared, skipping the test when the
// shared data is absent.
func sharedFile(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(repoRoot(), "..", "shared", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("skipping: %s is absent (the shared models are not checked out)", p)
	}
	return p
}

// f32 is a float32 written in Go's shortest round-trip form.
type f32 float32

func (v *f32) UnmarshalJSON(b []byte) error {
	x, err := strconv.ParseFloat(string(b), 32)
	*v = f32(x)
	return err
}

type bertRef struct {
	PoolingType int `json:"pooling_type"`
	NEmbd       int `json:"n_embd"`
	Tolerance   struct {
		Table struct {
			Embedding float64 `json:"embedding_max_abs"`
			Tokens    float64 `json:"token_embeddings_max_abs"`
		} `json:"engine_with_ggml_f16_gelu_table"`
	} `json:"tolerance"`
	Texts []struct {
		Name            string  `json:"name"`
		Text            string  `json:"text"`
		IDs             []int32 `json:"ids"`
		Embedding       []f32   `json:"embedding"`
		Unnormalized    []f32   `json:"embedding_unnormalized"`
		TokenEmbeddings [][]f32 `json:"token_embeddings"`
	} `json:"texts"`
}

func loadRef(t testing.TB) bertRef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "testdata", "synthetic", "synth-bert.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r bertRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Texts) == 0 || r.Tolerance.Table.Embedding == 0 || r.Tolerance.Table.Tokens == 0 {
		t.Fatal("reference JSON lacks texts or tolerances")
	}
	return r
}

func openSynthBert(t testing.TB, opt Options) *Encoder {
	t.Helper()
	f, err := gguf.Open(sharedFile(t, "models/synthetic/synth-bert.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e, err := Open(f, opt)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func maxAbsDiff(got []float32, want []f32) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var m float64
	for i, w := range want {
		m = max(m, math.Abs(float64(got[i])-float64(w)))
	}
	return m
}

// TestReference checks tokenization, per-token outputs, the pooled vector and
// the normalised embedding of every public text against llama.cpp's, within
// the bounds the reference gives an engine that uses ggml's F16 GELU table.
func TestReference(t *testing.T) {
	ref := loadRef(t)
	for _, threads := range []int{1, 3} {
		e := openSynthBert(t, Options{Threads: threads})
		if got := e.Config(); int(got.Pooling) != ref.PoolingType || got.NEmbd != ref.NEmbd {
			t.Fatalf("config %+v, reference pooling %d n_embd %d", got, ref.PoolingType, ref.NEmbd)
		}
		var worstEmb, worstPooled, worstTok float64
		for _, tc := range ref.Texts {
			ids := e.Tokenize(tc.Text)
			if !slices.Equal(ids, tc.IDs) {
				t.Errorf("%s: ids %v, llama.cpp %v", tc.Name, ids, tc.IDs)
				continue
			}
			got, err := e.Embed(ids)
			if err != nil {
				t.Fatalf("%s: %v", tc.Name, err)
			}
			if len(got.Tokens) != len(tc.TokenEmbeddings) {
				t.Fatalf("%s: %d token rows, want %d", tc.Name, len(got.Tokens), len(tc.TokenEmbeddings))
			}
			for i, row := range tc.TokenEmbeddings {
				worstTok = max(worstTok, maxAbsDiff(got.Tokens[i], row))
			}
			worstEmb = max(worstEmb, maxAbsDiff(got.Normalized, tc.Embedding))
			worstPooled = max(worstPooled, maxAbsDiff(got.Pooled, tc.Unnormalized))
		}
		t.Logf("threads %d: max |Δ| normalised %.3g (bound %g), pooled %.3g, tokens %.3g (bound %g)",
			threads, worstEmb, ref.Tolerance.Table.Embedding, worstPooled, worstTok, ref.Tolerance.Table.Tokens)
		if worstEmb > ref.Tolerance.Table.Embedding {
			t.Errorf("threads %d: normalised embedding max |Δ| %.3g > %g", threads, worstEmb, ref.Tolerance.Table.Embedding)
		}
		if worstTok > ref.Tolerance.Table.Tokens {
			t.Errorf("threads %d: token embeddings max |Δ| %.3g > %g", threads, worstTok, ref.Tolerance.Table.Tokens)
		}
		// The pooled vector has no bound of its own; its scale is the token
		// outputs', so it is held to theirs.
		if worstPooled > ref.Tolerance.Table.Tokens {
			t.Errorf("threads %d: pooled max |Δ| %.3g > %g", threads, worstPooled, ref.Tolerance.Table.Tokens)
		}
	}
}

// BenchmarkEmbed embeds the longest public text (18 tokens) of synth-bert.
func BenchmarkEmbed(b *testing.B) {
	ref := loadRef(b)
	e := openSynthBert(b, Options{Threads: 1})
	ids := ref.Texts[2].IDs
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids)*b.N)/b.Elapsed().Seconds(), "tokens/s")
}
