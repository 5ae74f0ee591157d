package encoder

import (
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// FuzzOpenEmbed feeds mutated tiny models to Open and, when one loads, token
// ids to Embed: neither may panic, whatever the bytes.
func FuzzOpenEmbed(f *testing.F) {
	// Small seeds keep the fuzzer's minimisation of new inputs fast.
	for _, mutate := range []func(*tiny){
		func(*tiny) {},
		func(s *tiny) { s.nLayer = 2 },
		func(s *tiny) { s.pooling, s.noTypes, s.tokEmbdF16 = 2, true, false },
	} {
		s := defaultTiny()
		s.nLayer, s.nEmbd, s.nHead, s.nFF, s.nPos = 1, 8, 2, 8, 6
		mutate(&s)
		f.Add(s.encode(f), []byte{2, 5, 6, 3})
	}
	f.Fuzz(func(t *testing.T, file, ids []byte) {
		g, err := gguf.Parse(file)
		if err != nil {
			return
		}
		e, err := Open(g, Options{Threads: 2})
		if err != nil {
			return
		}
		in := make([]int32, len(ids))
		for i, b := range ids {
			in[i] = int32(int8(b))
		}
		if res, err := e.Embed(in); err == nil && len(res.Tokens) != len(in) {
			t.Fatalf("%d token rows for %d ids", len(res.Tokens), len(in))
		}
	})
}
