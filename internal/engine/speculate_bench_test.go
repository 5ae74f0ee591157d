package engine

import (
	"flag"
	"path/filepath"
	"testing"
)

var (
	specModel  = flag.String("spec.model", "", "GGUF file BenchmarkSpeculative runs (default testdata's stories260K)")
	specPrompt = flag.String("spec.prompt", "", "prompt text for BenchmarkSpeculative (default: a text to be repeated with an edit)")
)

// editPrompt asks for a text back with one change, the shape of a code
// edit: most of the answer is already in the prompt. The default text suits
// stories260K (a model of children's stories); pass -spec.model and
// -spec.prompt for a code model and real code.
const editPrompt = `Lily and Ben went to the park. They saw a big red ball. Lily said, "Let's play!" Ben threw the ball to Lily. She caught it and laughed. Then they went home and had a nap.
Lily and Ben went to the park. They saw a big red ball. Lily said, "Let's play!" Ben threw the ball to Lily. She caught it and laughed. Then they went home and had a nap.
Lily and Ben went to the park. They saw a big`

// BenchmarkSpeculative measures greedy decode tokens/s with and without
// prompt-lookup drafting on a prompt the answer repeats, and the share of
// drafted tokens accepted.
func BenchmarkSpeculative(b *testing.B) {
	path := *specModel
	if path == "" {
		path = filepath.Join("..", "..", "testdata", "models", "stories260K.gguf")
	}
	m, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	text := *specPrompt
	if text == "" {
		text = editPrompt
	}
	prompt := m.EncodePrompt(text)
	const n = 128
	for _, tc := range []struct {
		name  string
		draft Drafter
	}{{"plain", nil}, {"lookup", PromptLookup{}}} {
		b.Run(tc.name, func(b *testing.B) {
			var tokens, drafted, accepted int
			var decode float64
			for b.Loop() {
				st, err := m.Generate(b.Context(), prompt, GenerateParams{MaxTokens: n, Draft: tc.draft}, func(Token) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				tokens += st.GeneratedTokens - 1
				decode += st.Decode.Seconds()
				drafted += st.DraftTokens
				accepted += st.DraftAccepted
			}
			b.ReportMetric(float64(tokens)/decode, "tok/s")
			if drafted > 0 {
				b.ReportMetric(float64(accepted)/float64(drafted), "accept")
			}
		})
	}
}
