package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mixedText builds about n bytes of prose, code, numbers, CJK, Cyrillic,
// Arabic and emoji from llama.cpp's test texts.
func mixedText(b *testing.B, n int) string {
	b.Helper()
	inp, err := os.ReadFile(filepath.Join(repoRoot(b), "testdata", "vocab", "ggml-vocab-llama-spm.gguf.inp"))
	if err != nil {
		b.Fatal(err)
	}
	parts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	parts = append(parts,
		"The quick brown fox jumps over the lazy dog. It's 2024; prices rose 3.5% to $1,234.56.\n",
		"func main() {\n\tfmt.Println(\"hello, world\") // greet\n}\n",
		"Привет, как дела? 你好，今天天气很好。 مرحبا بالعالم 🦙🚀\n")
	var sb strings.Builder
	for i := 0; sb.Len() < n; i++ {
		sb.WriteString(parts[i%len(parts)])
		sb.WriteByte(' ')
	}
	return sb.String()[:n]
}

func BenchmarkEncode100KB(b *testing.B) {
	for _, name := range []string{"llama-spm", "llama-bpe", "qwen2", "gpt-2", "deepseek-coder", "bert-bge"} {
		b.Run(name, func(b *testing.B) {
			tok := loadVocab(b, name)
			text := mixedText(b, 100<<10)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = len(tok.Encode(text, EncodeOptions{AddSpecial: true}))
			}
			b.ReportMetric(float64(n), "tokens")
		})
	}
}

func BenchmarkStreamDecode(b *testing.B) {
	for _, name := range []string{"llama-spm", "llama-bpe", "bert-bge"} {
		b.Run(name, func(b *testing.B) {
			tok := loadVocab(b, name)
			ids := tok.Encode(mixedText(b, 100<<10), EncodeOptions{})
			b.ReportAllocs()
			for b.Loop() {
				d := NewStreamDecoder(tok)
				for _, id := range ids {
					d.Push(id)
				}
				d.Flush()
			}
			b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkPreSplit100KB measures the pre-tokenizer alone, the part each
// tokenizer.ggml.pre family implements by hand.
func BenchmarkPreSplit100KB(b *testing.B) {
	for _, pre := range []string{"llama-bpe", "qwen2", "gpt-4o", "kimi-k2"} {
		b.Run(pre, func(b *testing.B) {
			p, err := lookupPre(pre)
			if err != nil {
				b.Fatal(err)
			}
			text := mixedText(b, 100<<10)
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			var c splitCtx
			var bufA, bufB []span
			for b.Loop() {
				bufA, bufB = p.preSplit(&c, text, bufA, bufB)
			}
			b.ReportMetric(float64(len(bufA)), "words")
		})
	}
}
