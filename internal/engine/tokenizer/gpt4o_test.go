package tokenizer

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// gpt4oVocabDir, when set, makes TestGPT4oReference write its relabelled
// vocabularies there for testdata/gen-gpt4o.sh instead of comparing.
var gpt4oVocabDir = flag.String("gpt4o-vocab-dir", "", "write the gpt-4o test vocabularies to this directory and stop")

// relabel copies a vocabulary-only GGUF with tokenizer.ggml.pre set to pre
// and its merges replaced by edit's result (tokens for new merges are
// appended; a nil result drops the key).
func relabel(src, dst, pre string, edit func(merges []string) ([]string, error)) error {
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	types, _ := f.Int32s("tokenizer.ggml.token_type")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	if len(toks) == 0 || len(types) != len(toks) || len(merges) == 0 {
		return fmt.Errorf("%s: want a BPE vocabulary with tokens, token types and merges", src)
	}
	if _, ok := f.Get("tokenizer.ggml.scores"); ok || len(f.Tensors) > 0 {
		return fmt.Errorf("%s: scores or tensors are not copied", src)
	}
	toks, types = slices.Clone(toks), slices.Clone(types)
	if merges, err = edit(slices.Clone(merges)); err != nil {
		return err
	}
	have := map[string]bool{}
	for _, s := range toks {
		have[s] = true
	}
	for _, m := range merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok || !have[a] || !have[b] {
			return fmt.Errorf("merge %q: both halves must be tokens of %s", m, src)
		}
		if !have[a+b] {
			toks, types = append(toks, a+b), append(types, TypeNormal)
			have[a+b] = true
		}
	}
	w := gguf.NewWriter()
	for _, kv := range f.KVs {
		v := kv.Value.V
		switch kv.Key {
		case "tokenizer.ggml.pre":
			v = pre
		case "tokenizer.ggml.tokens":
			v = toks
		case "tokenizer.ggml.token_type":
			v = types
		case "tokenizer.ggml.merges":
			if merges == nil {
				continue
			}
			v = merges
		}
		w.Set(kv.Key, v)
	}
	return w.WriteFile(dst)
}

// appendMergesFile returns an edit for relabel that appends the merges of
// testdata/NAME. Those join a word to a contraction that follows it, so
// whether the pre-tokenizer keeps the two in one word shows in the ids; a
// fixture vocabulary built for another split has no such merges.
func appendMergesFile(name string) func([]string) ([]string, error) {
	return func(merges []string) ([]string, error) {
		extra, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			return nil, err
		}
		return append(merges, strings.Split(strings.TrimSpace(string(extra)), "\n")...), nil
	}
}

// TestGPT4oReference tokenizes testdata/gpt4o.inp and llama.cpp's fixture
// texts with fixture vocabularies relabelled "gpt-4o" (the pre-tokenizer of
// gpt-oss files) and compares with the pinned llama.cpp's ids on the same
// files (testdata/gen-gpt4o.sh).
func TestGPT4oReference(t *testing.T) {
	for _, name := range []string{"gpt-2", "qwen2"} {
		t.Run(name, func(t *testing.T) {
			src := vocabPath(t, name)
			if *gpt4oVocabDir != "" {
				if err := relabel(src, filepath.Join(*gpt4oVocabDir, name+".gguf"), "gpt-4o", appendMergesFile("gpt4o-merges.txt")); err != nil {
					t.Fatal(err)
				}
				return
			}
			dst := filepath.Join(t.TempDir(), "vocab.gguf")
			if err := relabel(src, dst, "gpt-4o", appendMergesFile("gpt4o-merges.txt")); err != nil {
				t.Fatal(err)
			}
			tok := loadGGUF(t, dst)
			checkTokref(t, tok, "gpt4o-"+name+".json", 100)
		})
	}
}

// checkTokref checks tok against a tokref JSON file (testdata/NAME):
// llama.cpp's ids for each text, without and with the vocabulary's special
// tokens; the file must hold at least minCases texts, as its generator
// writes.
func checkTokref(t *testing.T, tok *Tokenizer, name string, minCases int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Text       string  `json:"text"`
			IDs        []int32 `json:"ids"`
			IDsDefault []int32 `json:"ids_default"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) < minCases {
		t.Fatalf("%s: %d cases, want at least the %d its generator writes", name, len(doc.Cases), minCases)
	}
	for _, c := range doc.Cases {
		if got := tok.Encode(c.Text, EncodeOptions{}); !slices.Equal(got, c.IDs) {
			t.Errorf("%q:\n got %v\nwant %v", c.Text, got, c.IDs)
		}
		if got := tok.Encode(c.Text, EncodeOptions{AddSpecial: true, ParseSpecial: true}); !slices.Equal(got, c.IDsDefault) {
			t.Errorf("%q with specials:\n got %v\nwant %v", c.Text, got, c.IDsDefault)
		}
	}
}
