package engine

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// maskAll is a constraint that allows nothing.
type maskAll struct{}

func (maskAll) Mask(l []float32) {
	for i := range l {
		l[i] = float32(math.Inf(-1))
	}
}
func (maskAll) Accept(int32) error { return nil }

// refuse allows everything and refuses every token drawn.
type refuse struct{}

func (refuse) Mask([]float32)     {}
func (refuse) Accept(int32) error { return errors.New("no") }

// TestGenerateHooks runs the loop on stories260K with each hook: a Step
// that is Forward changes nothing, ErrStop from emit ends the generation
// as an end-of-generation token does, and a constraint's refusal, an empty
// mask and a cancelled context end it with an error, the Stats counting
// what was done.
func TestGenerateHooks(t *testing.T) {
	m, err := Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prompt := m.EncodePrompt("Once upon a time")
	const n = 24
	greedy := GenerateParams{MaxTokens: n}
	var want []int32
	if _, err := m.Generate(t.Context(), prompt, greedy, func(tok Token) error {
		if tok.ID >= 0 {
			want = append(want, tok.ID)
		}
		return nil
	}); err != nil || len(want) != n {
		t.Fatalf("plain generation: %d tokens, %v", len(want), err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	steps := 0
	tests := []struct {
		name       string
		ctx        context.Context
		params     GenerateParams
		stopAfter  int // emit returns ErrStop at this token; 0 never
		wantTokens int
		wantFinish string
		wantErr    error // matched with errors.Is; nil for none
		anyErr     bool  // some error, whatever it is
	}{
		{name: "step_hook", params: GenerateParams{MaxTokens: n, Step: func(c *model.Cache, tok int32) ([]float32, error) {
			steps++
			r, err := m.Shard.Forward(c, model.Batch{Tokens: []int32{tok}})
			return r.Logits, err
		}}, wantTokens: n, wantFinish: FinishLength},
		{name: "emit_stops", params: greedy, stopAfter: 5, wantTokens: 5, wantFinish: FinishStop},
		{name: "constraint_refuses", params: GenerateParams{MaxTokens: n, Constraint: refuse{}}, anyErr: true},
		{name: "all_masked", params: GenerateParams{MaxTokens: n, Constraint: maskAll{}}, wantErr: ErrNoToken},
		{name: "cancelled", ctx: cancelled, params: greedy, wantErr: context.Canceled},
		{name: "bad_sampling", params: GenerateParams{Sample: sample.Params{Temperature: -1}}, wantErr: sample.ErrInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			var got []int32
			st, err := m.Generate(ctx, prompt, tt.params, func(tok Token) error {
				if tok.ID < 0 {
					return nil
				}
				if tok.Logits == nil {
					t.Fatal("a token came without its logits")
				}
				got = append(got, tok.ID)
				if len(got) == tt.stopAfter {
					return ErrStop
				}
				return nil
			})
			switch {
			case tt.anyErr && err == nil, !tt.anyErr && !errors.Is(err, tt.wantErr):
				t.Fatalf("error %v, want %v (any: %v)", err, tt.wantErr, tt.anyErr)
			case err != nil:
				if st.GeneratedTokens != len(got) {
					t.Fatalf("the Stats count %d tokens, %d were emitted", st.GeneratedTokens, len(got))
				}
				return
			}
			if !slices.Equal(got, want[:tt.wantTokens]) || st.GeneratedTokens != tt.wantTokens || st.FinishReason != tt.wantFinish {
				t.Fatalf("%d tokens %v, finish %s; want the plain generation's first %d, %s", st.GeneratedTokens, got, st.FinishReason, tt.wantTokens, tt.wantFinish)
			}
		})
	}
	if steps != n-1 {
		t.Errorf("the Step hook ran %d steps, want %d", steps, n-1)
	}
}

// TestEncodePrompt: a prompt gets the model's BOS once, even when its text
// starts with the BOS text a chat template writes.
func TestEncodePrompt(t *testing.T) {
	m, err := Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bos := m.Tok.BOS()
	plain := m.EncodePrompt("Hello")
	templated := m.EncodePrompt(m.Tok.TokenText(bos) + "Hello")
	if len(plain) < 2 || plain[0] != bos || plain[1] == bos || !slices.Equal(plain, templated) {
		t.Fatalf("plain %v, with the BOS text %v", plain, templated)
	}
}

// TestGeneratePreserved scripts a generation that draws a control token
// (stories260K's BOS) between two words: the streamed text drops it, as
// llama_detokenize without special tokens does, unless Preserved marks
// it, as the runner marks a chat dialect's markers.
func TestGeneratePreserved(t *testing.T) {
	m, err := Open(filepath.Join("..", "..", "testdata", "models", "stories260K.gguf"), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bos := m.Tok.BOS()
	if !m.Tok.IsControl(bos) {
		t.Fatalf("BOS %d is not a control token", bos)
	}
	words := m.Tok.Encode("once there", tokenizer.EncodeOptions{})
	script := []int32{words[0], bos, words[len(words)-1]}
	logitsFor := func(i int) []float32 {
		l := make([]float32, m.Config.NVocab)
		for j := range l {
			l[j] = float32(math.Inf(-1))
		}
		l[script[min(i, len(script)-1)]] = 0
		return l
	}
	run := func(preserved []bool) string {
		step := 0
		p := GenerateParams{MaxTokens: len(script), Preserved: preserved,
			Prefill: func([]int32, int) (*model.Cache, []float32, error) { return nil, logitsFor(0), nil },
			Step: func(*model.Cache, int32) ([]float32, error) {
				step++
				return logitsFor(step), nil
			}}
		var text string
		if _, err := m.Generate(t.Context(), m.EncodePrompt("x"), p, func(tok Token) error {
			text += tok.Text
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return text
	}
	bosText := m.Tok.TokenText(bos)
	plain := run(nil)
	marks := make([]bool, m.Config.NVocab)
	marks[bos] = true
	kept := run(marks)
	first, last := m.Tok.Piece(script[0], false), m.Tok.Piece(script[2], false)
	if bosText == "" || plain != first+last || kept != first+bosText+last {
		t.Fatalf("text %q without preserved tokens, %q with BOS (%q) preserved", plain, kept, bosText)
	}
}
