package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/grammar"
	"github.com/skulk/skulk/internal/engine/sample"
)

// testSchema is a JSON schema whose values the stories model can finish
// within the tests' budget.
const testSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"happy":{"type":"boolean"},"pet":{"enum":["cat","dog"]}},"required":["name","happy","pet"],"additionalProperties":false}`

// grammarOf builds a constraint's matcher from its source as the runner
// does: {} is any JSON object, anything else a JSON schema.
func grammarOf(src []byte) (*grammar.Matcher, error) {
	if string(src) == "{}" {
		return grammar.JSONObject(), nil
	}
	return grammar.Compile(src)
}

// constrainer returns a StageConfig.Constrain over the model's vocabulary,
// and the vocabulary for the reference runs.
func constrainer(t testing.TB, path string) (func([]byte) (Constraint, error), *grammar.Vocab) {
	t.Helper()
	tok, err := engine.OpenTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	pieces := make([]string, tok.VocabSize())
	for id := range pieces {
		pieces[id] = tok.Piece(int32(id), false)
	}
	v, err := grammar.NewVocab(pieces, tok.EOG())
	if err != nil {
		t.Fatal(err)
	}
	return func(src []byte) (Constraint, error) {
		m, err := grammarOf(src)
		if err != nil {
			return nil, err
		}
		return grammar.NewConstraintVocab(m, v), nil
	}, v
}

// generated is what one generation gave: tokens, their logprobs, and how
// it ended.
type generated struct {
	toks   []Token
	finish Finish
}

// constrainedReference runs req on the whole model with the engine's loop
// (engine.Model.Generate) under the same constraint, taking each token's
// logprobs from the logits it was drawn from as the runner's streamer
// does.
func constrainedReference(t testing.TB, path string, v *grammar.Vocab, req Request) generated {
	t.Helper()
	m, err := engine.Open(path, engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	params := engine.GenerateParams{MaxTokens: req.MaxTokens, Sample: req.Sample}
	if len(req.Constraint) > 0 {
		g, err := grammarOf(req.Constraint)
		if err != nil {
			t.Fatal(err)
		}
		params.Constraint = grammar.NewConstraintVocab(g, v)
	}
	var out generated
	st, err := m.Generate(t.Context(), req.Prompt, params, func(tok engine.Token) error {
		if tok.ID < 0 {
			return nil
		}
		got := Token{ID: tok.ID}
		if req.Logprobs || req.TopLogprobs > 0 {
			got.Logprob = sample.LogprobOf(tok.Logits, tok.ID)
			got.Top = sample.TopLogprobs(tok.Logits, req.TopLogprobs, nil)
		}
		out.toks = append(out.toks, got)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out.finish = Finish(st.FinishReason)
	return out
}

// sameToken compares tokens bit for bit (logprobs included).
func sameToken(a, b Token) bool {
	if a.ID != b.ID || math.Float32bits(a.Logprob) != math.Float32bits(b.Logprob) || len(a.Top) != len(b.Top) {
		return false
	}
	for i := range a.Top {
		if a.Top[i].ID != b.Top[i].ID || math.Float32bits(a.Top[i].Logprob) != math.Float32bits(b.Top[i].Logprob) {
			return false
		}
	}
	return true
}

// TestConstrainedBitIdentical: sequences under a JSON schema or any JSON
// object, with logprobs and top alternatives, greedy and seeded, all in
// flight at once with a free-text one, give on 1, 2 and 3 stages exactly
// the tokens, logprobs and finish of the engine's loop on the whole model.
func TestConstrainedBitIdentical(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	constrain, vocab := constrainer(t, path)
	prompts := storiesPrompts(t)
	const budget = 48
	reqs := []Request{
		{Prompt: prompts[0], MaxTokens: budget, Constraint: []byte(testSchema)},
		{Prompt: prompts[0], MaxTokens: budget, Constraint: []byte(testSchema), TopLogprobs: 5},
		{Prompt: prompts[len(prompts)-1], MaxTokens: budget, Constraint: []byte("{}"), Logprobs: true},
		{Prompt: prompts[0], MaxTokens: budget, Constraint: []byte(testSchema), TopLogprobs: 3,
			Sample: sample.Params{Temperature: 0.9, TopK: 40, TopP: 0.95, RepeatPenalty: 1.1, RepeatLastN: 64, Seed: 11}},
		{Prompt: prompts[0], MaxTokens: budget, TopLogprobs: MaxTopLogprobs},
		{Prompt: prompts[0], MaxTokens: budget},
	}
	want := make([]generated, len(reqs))
	for i, r := range reqs {
		want[i] = constrainedReference(t, path, vocab, r)
	}
	tok, err := engine.OpenTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, x := range want[0].toks {
		text.WriteString(tok.Piece(x.ID, false))
	}
	// The schema's value is complete within the budget: the grammar, not
	// the length, ended it.
	if want[0].finish != FinishStop {
		t.Fatalf("the reference under the schema ended with %q after %d tokens: %q", want[0].finish, len(want[0].toks), text.String())
	}
	g, err := grammar.Compile([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	if ok, complete := g.Prefix([]byte(text.String())); !ok || !complete {
		t.Fatalf("the reference's text %q does not match the schema", text.String())
	}
	t.Logf("under the schema: %s", text.String())
	for _, stages := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("stages=%d", stages), func(t *testing.T) {
			p := testPipeline(t, path, stages, Options{Head: HeadConfig{ChunkSize: 3}, Constrain: constrain})
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			seqs := make([]*Sequence, len(reqs))
			for i, r := range reqs {
				if seqs[i], err = p.Submit(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			for i, q := range seqs {
				var got generated
				for {
					x, err := q.NextToken(ctx)
					if err != nil {
						if err != io.EOF {
							t.Fatalf("sequence %d: %v after %d tokens", i, err, len(got.toks))
						}
						break
					}
					got.toks = append(got.toks, x)
				}
				got.finish = q.Finish()
				if got.finish != want[i].finish || !slices.EqualFunc(got.toks, want[i].toks, sameToken) {
					t.Fatalf("sequence %d (%d stages): finish %q, %d tokens\n%+v\nwhole model: finish %q, %d tokens\n%+v",
						i, stages, got.finish, len(got.toks), got.toks, want[i].finish, len(want[i].toks), want[i].toks)
				}
			}
		})
	}
}

// TestConstraintRefused: a constraint the last rank cannot build (no
// Constrain, a source it refuses) ends that sequence with ErrConstraint
// and nothing else: the pipeline serves on.
func TestConstraintRefused(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	constrain, _ := constrainer(t, path)
	for _, c := range []struct {
		name      string
		constrain func([]byte) (Constraint, error)
		src       string
	}{
		{"no_constrain", nil, testSchema},
		{"bad_source", constrain, `{"type":"integer","minimum":3}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := testPipeline(t, path, 2, Options{Constrain: c.constrain})
			ctx := t.Context()
			q, err := p.Submit(ctx, Request{Prompt: []int32{1, 403}, MaxTokens: 8, Constraint: []byte(c.src)})
			if err != nil {
				t.Fatal(err)
			}
			if toks, err := q.All(ctx); !errors.Is(err, ErrConstraint) || len(toks) != 0 {
				t.Fatalf("%d tokens, %v; want none and ErrConstraint", len(toks), err)
			}
			want := reference(t, path, []int32{1, 403}, 8, sample.Params{})
			equalTokens(t, "after the refusal", generate(t, p, []Request{{Prompt: []int32{1, 403}, MaxTokens: 8}})[0], want)
		})
	}
}

// TestSubmitConstraintBounds: the head refuses what the open object cannot
// carry.
func TestSubmitConstraintBounds(t *testing.T) {
	p := testPipeline(t, testFile(t, "models/stories260K.gguf"), 2, Options{})
	for _, r := range []Request{
		{Prompt: []int32{1}, TopLogprobs: MaxTopLogprobs + 1},
		{Prompt: []int32{1}, TopLogprobs: -1},
		{Prompt: []int32{1}, Constraint: bytes.Repeat([]byte(" "), MaxConstraintBytes+1)},
	} {
		if _, err := p.Submit(t.Context(), r); err == nil {
			t.Errorf("top %d, constraint of %d bytes: accepted", r.TopLogprobs, len(r.Constraint))
		}
	}
}
