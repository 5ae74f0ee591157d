package runner

import (
	"fmt"
	"testing"

	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// TestSpeculativeRunner: a runner loaded with prompt lookup or with a
// draft model (stories260K drafting for itself) gives a greedy request the
// text a plain runner gives, and its done chunk carries the draft counts;
// a sampled request speculates too, and gives the plain runner's text for
// its seed.
func TestSpeculativeRunner(t *testing.T) {
	const prompt = "Lily and Ben went to the park. They saw a big red ball. Lily and Ben went to the park. They saw a big red ball. Lily and Ben went to the park."
	plain := loadedClient(t, proto.LoadSpec{})
	want := generateAll(t, plain, "plain", greedy(prompt, 48))
	sampled := greedy(prompt, 32)
	temp, seed := 0.7, uint64(11)
	sampled.Sampling.Temperature, sampled.Sampling.Seed = &temp, &seed
	wantSampled := generateAll(t, plain, "plain-sampled", sampled)
	for _, spec := range []*proto.SpeculativeSpec{
		{Mode: proto.SpeculativeLookup},
		{Mode: proto.SpeculativeDraft, DraftModelPath: modelPath(t), DraftMax: 4},
	} {
		t.Run(spec.Mode, func(t *testing.T) {
			c := loadedClient(t, proto.LoadSpec{Speculative: spec})
			r := generateAll(t, c, "spec", greedy(prompt, 48))
			if r.content != want.content || r.last.Kind != request.ChunkDone {
				t.Fatalf("speculative greedy text %q (%+v), plain %q", r.content, r.last, want.content)
			}
			var tm *request.Timings
			if r.last.Usage != nil {
				tm = r.last.Usage.Timings
			}
			if tm == nil || tm.DraftN == 0 || tm.DraftNAccepted > tm.DraftN {
				t.Fatalf("done chunk timings %+v, want draft counts", tm)
			}
			if spec.Mode == proto.SpeculativeDraft && tm.DraftNAccepted != tm.DraftN {
				t.Errorf("the model drafting for itself: %d of %d drafts accepted", tm.DraftNAccepted, tm.DraftN)
			}
			t.Logf("%s: %d drafted, %d accepted", spec.Mode, tm.DraftN, tm.DraftNAccepted)
			// Concurrent tasks draft each with its own cache (the draft
			// model's weights are shared) and decode each its own text.
			chans := make([]<-chan request.Chunk, 3)
			for i := range chans {
				ch, err := c.Generate(t.Context(), fmt.Sprintf("spec-%d", i), greedy(prompt, 48))
				if err != nil {
					t.Fatal(err)
				}
				chans[i] = ch
			}
			for i, ch := range chans {
				if r := collect(t, ch); r.content != want.content {
					t.Errorf("concurrent task %d: %q, want %q", i, r.content, want.content)
				}
			}
			r = generateAll(t, c, "sampled", sampled)
			if r.content != wantSampled.content || r.last.Kind != request.ChunkDone || r.last.Usage == nil || r.last.Usage.Timings == nil || r.last.Usage.Timings.DraftN == 0 {
				t.Fatalf("a sampled request: %q (%+v), want the plain runner's %q with draft counts", r.content, r.last, wantSampled.content)
			}
		})
	}
}
