package grammar

import (
	"testing"
)

// benchStates are texts after which Mask is measured: inside a free
// string (the widest state: nearly every token is allowed), before an
// object key, inside a number.
var benchStates = []struct{ name, prefix string }{
	{"in-string", `{"steps":[{"explanation":"The answer is`},
	{"before-key", `{"steps":[],`},
	{"in-number", `{"n":12`},
}

const benchSchema = `{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object","properties":{"explanation":{"type":"string"},"output":{"type":"string"}},"required":["explanation","output"],"additionalProperties":false}},"final_answer":{"type":"string"},"n":{"type":"number"}},"required":["steps","final_answer"],"additionalProperties":false}`

// BenchmarkMask measures one Mask call per op on a 32k (llama-spm) and a
// 152k (qwen2) vocabulary: "cold" walks the token trie every time (the
// cost of a state never seen before), "cached" is a repeated state.
func BenchmarkMask(b *testing.B) {
	for _, vocab := range []string{"llama-spm", "qwen2"} {
		tok, pieces := loadPieces(b, vocab)
		v, err := NewVocab(pieces, tok.EOG())
		if err != nil {
			b.Fatal(err)
		}
		m := mustCompile(b, benchSchema)
		for _, st := range benchStates {
			c := NewConstraintVocab(m, v)
			var a *arena
			for i := 0; i < len(st.prefix); i++ {
				c.state = a.stepSet(c.state, st.prefix[i], nil)
			}
			if len(c.state) == 0 {
				b.Fatalf("bad bench prefix %q", st.prefix)
			}
			logits := make([]float32, len(pieces))
			for _, mode := range []string{"cold", "cached"} {
				b.Run(vocab+"/"+st.name+"/"+mode, func(b *testing.B) {
					b.ReportAllocs()
					c.Mask(logits)
					allowed := len(c.Allowed(nil))
					for b.Loop() {
						if mode == "cold" {
							clear(c.cache)
						}
						c.Mask(logits)
					}
					b.ReportMetric(float64(allowed), "allowed")
				})
			}
		}
	}
}

// BenchmarkNewVocab measures building the token trie.
func BenchmarkNewVocab(b *testing.B) {
	for _, vocab := range []string{"llama-spm", "qwen2"} {
		tok, pieces := loadPieces(b, vocab)
		b.Run(vocab, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewVocab(pieces, tok.EOG()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile measures compiling a typical structured-output schema.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile([]byte(benchSchema)); err != nil {
			b.Fatal(err)
		}
	}
}
