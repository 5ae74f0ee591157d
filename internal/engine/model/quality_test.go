package model

import (
	"math"
	"path/filepath"
	"testing"
)

// meanNLL is the mean negative log-likelihood of the reference continuations
// under s, teacher-forced: every prompt and its recorded tokens as one batch.
func meanNLL(t *testing.T, s *Shard, cases []genCase) float64 {
	t.Helper()
	var sum float64
	var n int
	for _, c := range cases {
		seq := append(append([]int32(nil), c.PromptIDs...), c.GeneratedIDs...)
		cache := s.NewCache(len(seq))
		res, err := s.Forward(cache, Batch{Tokens: seq, AllLogits: true})
		if err != nil {
			t.Fatal(err)
		}
		nv := s.Config.NVocab
		for i := len(c.PromptIDs) - 1; i < len(seq)-1; i++ {
			p := softmax64(res.Logits[i*nv : (i+1)*nv])
			sum -= math.Log(p[seq[i+1]])
			n++
		}
	}
	return sum / float64(n)
}

// TestActivationRoundingQuality: the llama.cpp-style path (SIMD kernels,
// activations rounded to 8 bits for quantized weights) must not make the
// mean NLL of the reference continuations more than 0.5% worse than exact
// F32 activations — on stories260K and on the synthetic Q8_0 and Q4_K models
// (whose greedy continuations from llama.cpp serve as the text).
func TestActivationRoundingQuality(t *testing.T) {
	var ref refFile
	readJSON(t, findTestFile(t, "reference/stories260K.json", "reference/stories260K.json"), &ref)
	// testdata path → shared path, and the texts to score.
	// Each model runs with the K/V cache its reference texts were made
	// with: fp16 for stories260K (llama.cpp's default), F32 for the
	// synthetic ones (reference/synthetic/README.md).
	type model struct {
		shared   string
		cases    []genCase
		f32Cache bool
	}
	models := map[string]model{"models/stories260K.gguf": {"models/stories260K.gguf", ref.Generation.Cases, false}}
	for _, name := range []string{"synth-llama-q8_0", "synth-llama-q4_k"} {
		var sr synthRef
		readJSON(t, findTestFile(t, filepath.Join("synthetic", name+".json"), filepath.Join("reference", "synthetic", name+".json")), &sr)
		var cases []genCase
		for _, p := range sr.Prompts {
			cases = append(cases, genCase{PromptIDs: p.IDs, GeneratedIDs: p.Generated})
		}
		models[filepath.Join("synthetic", name+".gguf")] = model{filepath.Join("models", "synthetic", name+".gguf"), cases, true}
	}
	for path, m := range models {
		cases := m.cases
		p := findTestFile(t, path, m.shared)
		fast, _ := openShard(t, p, whole, Options{Threads: 2, F32Cache: m.f32Cache})
		exact, _ := openShard(t, p, whole, Options{Threads: 2, ExactActivations: true, F32Cache: m.f32Cache})
		nf, ne := meanNLL(t, fast, cases), meanNLL(t, exact, cases)
		t.Logf("%s: mean NLL %.5f with rounded activations, %.5f exact (%+.3f%%)", filepath.Base(path), nf, ne, 100*(nf-ne)/ne)
		if nf > ne*1.005 {
			t.Errorf("%s: rounded activations raise the mean NLL by %.3f%% (limit 0.5%%)", path, 100*(nf-ne)/ne)
		}
	}
}
