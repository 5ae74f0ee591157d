package engine

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/synth"
	"github.com/skulk/skulk/internal/engine/tensor"
)

// synthModel writes a synthesized model of shape s with weights from seed
// and opens it.
func synthModel(t *testing.T, s synth.Shape, seed uint64, opt Options) *Model {
	t.Helper()
	w, err := synth.Build(s, tensor.Q8_0, rand.New(rand.NewPCG(seed, 2)))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), s.Name+".gguf")
	if err := w.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	m, err := Open(p, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

var specShape = synth.Shape{Name: "spec", Arch: "llama", NEmbd: 128, NLayer: 2, NHead: 2, NHeadKV: 1,
	NFF: 256, NVocab: 300, RopeBase: 10000, CtxLen: 1024}

// generateIDs runs Generate and returns the ids and text it emitted.
func generateIDs(t *testing.T, m *Model, prompt []int32, p GenerateParams) ([]int32, string, Stats) {
	t.Helper()
	var ids []int32
	var text []byte
	st, err := m.Generate(t.Context(), prompt, p, func(tok Token) error {
		if tok.ID >= 0 {
			ids = append(ids, tok.ID)
		}
		text = append(text, tok.Text...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, string(text), st
}

// TestSpeculativeGreedyIdentical: with any drafter, greedy generation
// gives the same tokens and text as without one, on stories260K and on a
// synthesized model (with the default and a quantized K/V cache). Prompt
// lookup drafts on a repetitive prompt; the model drafting for itself has
// every draft accepted (verification sees the logits the steps would);
// another model of the same vocabulary has drafts rejected and the K/V of
// the rejected tokens rolled back.
func TestSpeculativeGreedyIdentical(t *testing.T) {
	stories, err := Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer stories.Close()
	storiesDraft, err := Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer storiesDraft.Close()
	synthF16 := synthModel(t, specShape, 1, Options{Threads: 2})
	synthQ8 := synthModel(t, specShape, 1, Options{Threads: 2, CacheType: "q8_0"})
	other := synthModel(t, specShape, 7, Options{Threads: 1})

	// A repetitive prompt: a run of random tokens, then its start again.
	rng := rand.New(rand.NewPCG(3, 4))
	run := []int32{1}
	for range 40 {
		run = append(run, 3+rng.Int32N(290))
	}
	synthPrompt := append(slices.Clone(run), run[1:20]...)
	storiesPrompt := stories.EncodePrompt("Once upon a time, there was a little girl named Lily. She loved to play outside. Once upon a time, there was a little girl named Lily. She")

	const n = 96
	cases := []struct {
		name        string
		m           *Model
		prompt      []int32
		draft       func(t *testing.T) Drafter
		allAccepted bool
	}{
		{"stories260K/lookup", stories, storiesPrompt, func(*testing.T) Drafter { return PromptLookup{} }, false},
		{"stories260K/self", stories, storiesPrompt, func(t *testing.T) Drafter { return newDraft(t, stories, storiesDraft) }, true},
		{"synth/lookup", synthF16, synthPrompt, func(*testing.T) Drafter { return PromptLookup{MinNGram: 1} }, false},
		{"synth/other-model", synthF16, synthPrompt, func(t *testing.T) Drafter { return newDraft(t, synthF16, other) }, false},
		{"synth-kv-q8_0/lookup", synthQ8, synthPrompt, func(*testing.T) Drafter { return PromptLookup{MinNGram: 1} }, false},
		{"synth-kv-q8_0/other-model", synthQ8, synthPrompt, func(t *testing.T) Drafter { return newDraft(t, synthQ8, other) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, wantText, _ := generateIDs(t, tc.m, tc.prompt, GenerateParams{MaxTokens: n})
			for _, max := range []int{1, 3, 0} {
				got, gotText, st := generateIDs(t, tc.m, tc.prompt, GenerateParams{MaxTokens: n, Draft: tc.draft(t), DraftMax: max})
				if !slices.Equal(got, want) || gotText != wantText {
					t.Fatalf("draft max %d: speculative greedy gave\n%v\nplain greedy\n%v", max, got, want)
				}
				t.Logf("draft max %d: %d tokens, %d drafted, %d accepted", max, len(got), st.DraftTokens, st.DraftAccepted)
				if st.DraftTokens == 0 || st.DraftAccepted > st.DraftTokens {
					t.Errorf("draft max %d: %d drafted, %d accepted", max, st.DraftTokens, st.DraftAccepted)
				}
				if tc.allAccepted && st.DraftAccepted != st.DraftTokens {
					t.Errorf("draft max %d: the model drafting for itself had %d of %d drafts accepted", max, st.DraftAccepted, st.DraftTokens)
				}
			}
		})
	}
}

// TestSpeculativeSampledIdentical: a sampled generation speculates and
// gives, for every seed, the tokens of the same generation without a
// drafter: each token is still drawn from its own position's logits by the
// same sampler and random stream (the verification pass's logits are a
// step's, bit for bit), so the output distribution is exactly plain
// sampling's. With a prompt-lookup drafter and with another model
// drafting, on the default and a quantized cache, over many seeds.
func TestSpeculativeSampledIdentical(t *testing.T) {
	synthF16 := synthModel(t, specShape, 1, Options{Threads: 2})
	synthQ8 := synthModel(t, specShape, 1, Options{Threads: 2, CacheType: "q8_0"})
	other := synthModel(t, specShape, 7, Options{Threads: 1})
	rng := rand.New(rand.NewPCG(3, 4))
	run := []int32{1}
	for range 40 {
		run = append(run, 3+rng.Int32N(290))
	}
	prompt := append(slices.Clone(run), run[1:20]...)
	stories, err := Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer stories.Close()
	storiesPrompt := stories.EncodePrompt("Once upon a time, there was a little girl named Lily. She loved to play outside. Once upon a time, there was a little girl named Lily. She")
	for _, tc := range []struct {
		name   string
		m      *Model
		prompt []int32
		draft  func(t *testing.T) Drafter
	}{
		{"stories260K/lookup", stories, storiesPrompt, func(*testing.T) Drafter { return PromptLookup{} }},
		{"lookup", synthF16, prompt, func(*testing.T) Drafter { return PromptLookup{MinNGram: 1} }},
		{"kv-q8_0/lookup", synthQ8, prompt, func(*testing.T) Drafter { return PromptLookup{MinNGram: 1} }},
		{"other-model", synthF16, prompt, func(t *testing.T) Drafter { return newDraft(t, synthF16, other) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drafted, accepted := 0, 0
			for seed := range uint64(24) {
				for _, temp := range []float32{0.3, 1.0} {
					p := GenerateParams{MaxTokens: 48, Sample: sample.Params{Temperature: temp, TopP: 0.95, Seed: seed}}
					want, wantText, _ := generateIDs(t, tc.m, tc.prompt, p)
					p.Draft = tc.draft(t)
					got, gotText, st := generateIDs(t, tc.m, tc.prompt, p)
					if !slices.Equal(got, want) || gotText != wantText {
						t.Fatalf("seed %d, temperature %v: speculative sampling gave\n%v\nplain\n%v", seed, temp, got, want)
					}
					drafted, accepted = drafted+st.DraftTokens, accepted+st.DraftAccepted
				}
			}
			t.Logf("48 generations: %d tokens drafted, %d accepted", drafted, accepted)
			if drafted == 0 || accepted == 0 {
				t.Fatalf("sampled generations drafted %d tokens and took %d: no speculation", drafted, accepted)
			}
		})
	}
}

func newDraft(t *testing.T, target, d *Model) *DraftModel {
	t.Helper()
	dm, err := NewDraftModel(target, d, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return dm
}

// TestDraftVocabMismatch: a draft model whose vocabulary differs in size,
// or in one token's text, is refused with ErrDraftVocab.
func TestDraftVocabMismatch(t *testing.T) {
	target := synthModel(t, specShape, 1, Options{Threads: 1})
	bigger := specShape
	bigger.Name, bigger.NVocab = "bigger", 320
	if _, err := NewDraftModel(target, synthModel(t, bigger, 1, Options{Threads: 1}), 64); !errors.Is(err, ErrDraftVocab) {
		t.Errorf("a 320-token draft for a 300-token model: %v", err)
	}
	stories, err := Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer stories.Close()
	if _, err := NewDraftModel(target, stories, 64); !errors.Is(err, ErrDraftVocab) {
		t.Errorf("stories260K as the draft of a synthesized model: %v", err)
	}
}

// TestPromptLookup drafts from the latest earlier occurrence of the
// longest matching n-gram.
func TestPromptLookup(t *testing.T) {
	tests := []struct {
		seq  []int32
		n    int
		want []int32
	}{
		{[]int32{1, 2, 3, 4, 5, 9, 2, 3}, 3, []int32{4, 5, 9}},
		{[]int32{1, 2, 3, 4, 5, 9, 2, 3}, 10, []int32{4, 5, 9, 2, 3}},
		{[]int32{7, 2, 3, 8, 1, 2, 3, 4, 5, 1, 2, 3}, 2, []int32{4, 5}}, // the 3-gram 1 2 3 beats the later 2-gram
		{[]int32{5, 6, 7, 8}, 4, nil},
		{[]int32{5}, 4, nil},
	}
	for _, tt := range tests {
		got, err := PromptLookup{}.Draft(tt.seq, tt.n)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Draft(%v, %d) = %v, %v; want %v", tt.seq, tt.n, got, err, tt.want)
		}
	}
}
