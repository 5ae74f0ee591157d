package runner

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/serving/pipeline"
	"github.com/skulk/skulk/internal/serving/prompt"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// openWhole loads stories260K held whole in this process, as a runner
// does: its sequences run on the local sequencer.
func openWhole(t *testing.T) *loaded {
	t.Helper()
	l, err := openModel(proto.LoadSpec{ModelPath: modelPath(t), Threads: 1}, serving{slots: DefaultSlots, chunk: DefaultPrefillChunk}, testLogger(), func() {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	return l
}

// openSplit loads stories260K as rank 0 of a runner does when the model is
// split over ranks stages: the tokenizer and chat template here, the
// blocks in an in-process pipeline whose head is the sequencer.
func openSplit(t *testing.T, ranks int) *loaded {
	t.Helper()
	m, err := engine.Open(modelPath(t), engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	l := &loaded{m: m, context: m.Config.ContextLength}
	l.prompts = &prompt.Model{M: m, Context: l.context, MaxConstraintBytes: pipeline.MaxConstraintBytes}
	if l.prompts.Chat, err = prompt.SetupChat(m, ""); err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(m.File, pipeline.Split(m.Config.NLayer, ranks), pipeline.Options{Threads: 1,
		Head:      pipeline.HeadConfig{Context: l.context, EndOfGeneration: m.Tok.IsEOG},
		Constrain: l.stageConstraint})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	l.seqs = p.Stage(0)
	return l
}

// runTask runs req as a runner's task on l and gathers its chunks.
func runTask(t *testing.T, l *loaded, req request.Request) result {
	t.Helper()
	out := make(chan proto.Message)
	chunks := make(chan request.Chunk)
	go func() {
		defer close(chunks)
		for m := range out {
			chunks <- *m.Chunk
		}
	}()
	go func() {
		(&task{id: "t", req: req}).run(t.Context(), l, testLogger(), out)
		close(out)
	}()
	return collect(t, chunks)
}

// TestOneGeneratePath: a task's answer comes out of one path, whoever
// computes its tokens. The same requests, run on the model held whole and
// on the head of in-process pipelines of two and three stages, give the
// same chunks and finish reasons: the length limit (max_tokens), a stop
// sequence, an end of generation (the grammar of a JSON schema allows only
// that once the value is complete), logprobs, a JSON object cut by the
// length limit and a forced tool call. A change to what ends a sequence
// (sequence.Judge, sequence.Budget) or to how the runner tells a finish
// shows in both.
func TestOneGeneratePath(t *testing.T) {
	prompt, want, _, n := reference(t)
	cases := append([]sameAsWholeCase{
		{"max_tokens", greedy(prompt, n), func(r result) error {
			if r.content != want {
				return fmt.Errorf("greedy text %q, want llama.cpp's %q", r.content, want)
			}
			if u := r.last.Usage; r.last.FinishReason != request.FinishLength || u == nil || u.CompletionTokens != n {
				return fmt.Errorf("last chunk %+v, want finish_reason length after %d tokens", r.last, n)
			}
			return nil
		}},
		{"max_tokens_one", greedy(prompt, 1), func(r result) error {
			if u := r.last.Usage; r.last.FinishReason != request.FinishLength || u == nil || u.CompletionTokens != 1 {
				return fmt.Errorf("last chunk %+v, want finish_reason length after 1 token", r.last)
			}
			return nil
		}},
	}, sameAsWholeCases()...)
	whole := openWhole(t)
	wholeResults := make([]result, len(cases))
	for i, c := range cases {
		wholeResults[i] = runTask(t, whole, c.req)
		if err := c.check(wholeResults[i]); err != nil {
			t.Errorf("%s on the whole model: %v", c.name, err)
		}
	}
	for _, ranks := range []int{2, 3} {
		t.Run(fmt.Sprint(ranks), func(t *testing.T) {
			split := openSplit(t, ranks)
			for i, c := range cases {
				got := runTask(t, split, c.req)
				if err := c.check(got); err != nil {
					t.Errorf("%s on %d stages: %v", c.name, ranks, err)
				}
				if !reflect.DeepEqual(untimed(got.chunks), untimed(wholeResults[i].chunks)) {
					t.Errorf("%s: %d stages' chunks\n%+v\nthe whole model's\n%+v", c.name, ranks, got.chunks, wholeResults[i].chunks)
				}
			}
		})
	}
}
