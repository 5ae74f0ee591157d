package tokenizer

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// kimiVocabDir, when set, makes TestKimiK2Reference write its relabelled
// vocabularies there for testdata/gen-kimi-k2.sh instead of comparing.
var kimiVocabDir = flag.String("kimi-k2-vocab-dir", "", "write the kimi-k2 test vocabularies to this directory and stop")

// inpTexts reads a llama.cpp .inp file: texts separated by
// "\n__ggml_vocab_test__\n".
func inpTexts(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n__ggml_vocab_test__\n"), "\n__ggml_vocab_test__\n"), nil
}

// pairMerges replaces a vocabulary's merges with one merge per adjacent pair
// of bytes (as byte-level characters) in the texts. No pair can merge across
// a word boundary, so nearly every boundary the splitter draws or misses
// shows in the ids, whatever script the text is in. Pairs that straddle two
// code points rank first: otherwise a multi-byte character's lead byte
// merges with its own continuation first and hides the boundary before it.
func pairMerges(paths ...string) func([]string) ([]string, error) {
	return func([]string) ([]string, error) {
		var merges, inner []string
		seen := map[string]bool{}
		for _, p := range paths {
			texts, err := inpTexts(p)
			if err != nil {
				return nil, err
			}
			for _, text := range texts {
				for i := 0; i+1 < len(text); i++ {
					m := string(byteToRune[text[i]]) + " " + string(byteToRune[text[i+1]])
					if seen[m] {
						continue
					}
					seen[m] = true
					if utf8.RuneStart(text[i+1]) {
						merges = append(merges, m)
					} else {
						inner = append(inner, m)
					}
				}
			}
		}
		return append(merges, inner...), nil
	}
}

// kimiVocabs are the vocabularies TestKimiK2Reference relabels "kimi-k2":
// two fixtures plus the contraction merges of testdata/gpt4o-merges.txt, and
// the gpt-2 tokens with pairMerges of the test texts as their only merges.
func kimiVocabs(t *testing.T) map[string]struct {
	src  string
	edit func([]string) ([]string, error)
} {
	t.Helper()
	fixture := filepath.Join(repoRoot(t), "testdata", "vocab", "ggml-vocab-gpt-2.gguf.inp")
	type vocab = struct {
		src  string
		edit func([]string) ([]string, error)
	}
	m := map[string]vocab{}
	for _, name := range []string{"gpt-2", "qwen2"} {
		if p, ok := findVocab(name); ok {
			m[name] = vocab{p, appendMergesFile("gpt4o-merges.txt")}
		}
	}
	if p, ok := findVocab("gpt-2"); ok {
		m["pairs"] = vocab{p, pairMerges(filepath.Join("testdata", "kimi-k2.inp"), fixture)}
	}
	return m
}

// TestKimiK2Reference tokenizes testdata/kimi-k2.inp and llama.cpp's
// fixture texts with vocabularies relabelled "kimi-k2" (Kimi K2's
// pre-tokenizer) and compares with the pinned llama.cpp's ids on the same
// files (testdata/gen-kimi-k2.sh).
func TestKimiK2Reference(t *testing.T) {
	vocabs := kimiVocabs(t)
	for _, name := range []string{"gpt-2", "qwen2", "pairs"} {
		t.Run(name, func(t *testing.T) {
			v, ok := vocabs[name]
			if !ok {
				t.Skipf("no source vocabulary for %s (ggml-vocab-*.gguf in testdata/vocab or ../shared/models/vocab)", name)
			}
			if *kimiVocabDir != "" {
				if err := relabel(v.src, filepath.Join(*kimiVocabDir, name+".gguf"), "kimi-k2", v.edit); err != nil {
					t.Fatal(err)
				}
				return
			}
			dst := filepath.Join(t.TempDir(), "vocab.gguf")
			if err := relabel(v.src, dst, "kimi-k2", v.edit); err != nil {
				t.Fatal(err)
			}
			tok := loadGGUF(t, dst)
			checkTokref(t, tok, "kimi-k2-"+name+".json", 184)
		})
	}
}

// TestKimiK2WithoutMerges: llama.cpp loads a kimi-k2 vocabulary that lacks
// tokenizer.ggml.merges and then encodes every word byte by byte, which is
// not how the model was trained; we refuse the file instead.
func TestKimiK2WithoutMerges(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "vocab.gguf")
	drop := func([]string) ([]string, error) { return nil, nil }
	if err := relabel(vocabPath(t, "gpt-2"), dst, "kimi-k2", drop); err != nil {
		t.Fatal(err)
	}
	v := tinyBPE("kimi-k2")
	v.Merges = nil
	for _, load := range []func() error{
		func() error { _, err := New(v); return err },
		func() error {
			f, err := gguf.Open(dst)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = FromGGUF(f)
			return err
		},
	} {
		err := load()
		if !errors.Is(err, ErrInvalidVocab) || !strings.Contains(err.Error(), "merges") {
			t.Errorf("err = %v, want ErrInvalidVocab about the missing merges", err)
		}
	}
}

// FuzzKimiK2Split checks that the kimi-k2 splitter never panics and that
// its words are non-empty and tile the decoded input in order. The seeds
// are testdata/kimi-k2.inp and llama.cpp's fixture texts.
func FuzzKimiK2Split(f *testing.F) {
	for _, p := range []string{
		filepath.Join("testdata", "kimi-k2.inp"),
		filepath.Join(repoRoot(f), "testdata", "vocab", "ggml-vocab-gpt-2.gguf.inp"),
	} {
		texts, err := inpTexts(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, s := range texts {
			f.Add(s)
		}
	}
	f.Add("\xff\xe4\xb8\xad\xe4'\xf0\x9f\xa6")
	p, err := lookupPre("kimi-k2")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var c splitCtx
		words, _ := p.preSplit(&c, text, nil, nil)
		var b []byte
		next := 0
		for _, w := range words {
			if w.start != next || w.end <= w.start {
				t.Fatalf("%q: word [%d,%d) after %d", text, w.start, w.end, next)
			}
			next = w.end
			for _, r := range c.rs[w.start:w.end] {
				b = appendRune(b, r)
			}
		}
		if next != len(c.rs) {
			t.Fatalf("%q: words end at %d of %d code points", text, next, len(c.rs))
		}
		var want []byte
		for _, r := range decodeRunes(nil, text) {
			want = appendRune(want, r)
		}
		if string(b) != string(want) {
			t.Fatalf("%q: words join to %q", text, b)
		}
		if utf8.ValidString(text) && string(b) != text {
			t.Fatalf("%q: words join to %q", text, b)
		}
	})
}
