package pipeline

import (
	"fmt"
	"io"
	"testing"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
)

// TestTimings: a traced sequence comes back with every rank's timings, in
// rank order, each counting the whole prompt and the decode steps it ran;
// the tokens are those of an untraced run; a sequence not traced gets
// none.
func TestTimings(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	prompt := storiesPrompts(t)[0]
	const maxTokens = 12
	want := reference(t, path, prompt, maxTokens, sample.Params{})
	for _, ranks := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("ranks=%d", ranks), func(t *testing.T) {
			p := testPipeline(t, path, ranks, Options{Head: HeadConfig{Slots: 2, ChunkSize: 3}})
			for _, trace := range []bool{true, false} {
				var got []int32
				st, err := p.Stage(0).Generate(t.Context(), sequence.Spec{Prompt: prompt, MaxTokens: maxTokens, Trace: trace},
					func(tok sequence.Token) error { got = append(got, tok.ID); return nil })
				if err != nil && err != io.EOF {
					t.Fatal(err)
				}
				equalTokens(t, fmt.Sprintf("trace=%v", trace), got, want)
				if !trace {
					if st.Ranks != nil {
						t.Fatalf("an untraced sequence has timings %+v", st.Ranks)
					}
					continue
				}
				if len(st.Ranks) != ranks {
					t.Fatalf("%d ranks' timings, want %d: %+v", len(st.Ranks), ranks, st.Ranks)
				}
				for i, r := range st.Ranks {
					// Each rank reads the whole prompt and steps every
					// delivered token but the last (which is not fed back).
					if r.Rank != i || r.PrefillRows != len(prompt) || r.DecodeSteps != len(want)-1 ||
						r.PrefillBusy <= 0 || r.DecodeBusy <= 0 || r.Released.Before(r.Opened) {
						t.Errorf("rank %d's timing %+v", i, r)
					}
				}
			}
		})
	}
}
