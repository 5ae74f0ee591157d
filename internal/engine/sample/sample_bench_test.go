package sample

import (
	"testing"
)

// BenchmarkSample measures one token's sampling over a Llama 3 sized
// vocabulary; SetBytes counts the logits read, so MB/s is scan bandwidth.
func BenchmarkSample(b *testing.B) {
	const vocab = 128256
	logits := randomLogits(b, 1, vocab)
	history := make([]int32, 256)
	for i := range history {
		history[i] = int32(i * 101 % vocab)
	}
	cases := []struct {
		name string
		p    Params
	}{
		{"greedy", Params{}},
		{"temperature", Params{Temperature: 0.8}},
		{"top_k_40", Params{Temperature: 0.8, TopK: 40}},
		{"top_p_0.9", Params{Temperature: 0.8, TopP: 0.9}},
		{"llama_defaults", Params{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := New(c.p, vocab)
			b.SetBytes(vocab * 4)
			b.ReportAllocs()
			for b.Loop() {
				s.Sample(logits, history)
			}
		})
	}
}

func BenchmarkTopLogprobs(b *testing.B) {
	const vocab = 128256
	logits := randomLogits(b, 2, vocab)
	dst := make([]Logprob, 0, 20)
	b.SetBytes(vocab * 4)
	b.ReportAllocs()
	for b.Loop() {
		dst = TopLogprobs(logits, 20, dst[:0])
	}
}
