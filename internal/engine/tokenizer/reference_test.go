package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

type refCase struct {
	ID                string  `json:"id"`
	Text              string  `json:"text"`
	IDs               []int32 `json:"ids"`
	IDsParseSpecial   []int32 `json:"ids_parse_special"`
	IDsDefault        []int32 `json:"ids_default"`
	Detok             string  `json:"detok"`
	Roundtrip         bool    `json:"roundtrip"`
	DetokParseSpecial string  `json:"detok_parse_special"`
}

func readRefCases(t *testing.T, path string) []refCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("missing %s: %v", path, err)
	}
	var doc struct {
		Tokenization struct {
			Cases []refCase `json:"cases"`
		} `json:"tokenization"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(doc.Tokenization.Cases) == 0 {
		t.Fatalf("%s: no tokenization cases", path)
	}
	return doc.Tokenization.Cases
}

// checkReference compares every case of a refgen JSON file: the three
// tokenizations and both detokenizations, as llama.cpp produced them.
func checkReference(t *testing.T, tok *Tokenizer, cases []refCase) {
	t.Helper()
	pass := 0
	for _, c := range cases {
		ok := true
		check := func(what string, got, want []int32) {
			if !slices.Equal(got, want) {
				t.Errorf("%s %s %q:\n got %v\nwant %v", c.ID, what, c.Text, got, want)
				ok = false
			}
		}
		check("ids", tok.Encode(c.Text, EncodeOptions{}), c.IDs)
		check("ids_parse_special", tok.Encode(c.Text, EncodeOptions{ParseSpecial: true}), c.IDsParseSpecial)
		check("ids_default", tok.Encode(c.Text, EncodeOptions{AddSpecial: true, ParseSpecial: true}), c.IDsDefault)
		if got := tok.Decode(c.IDs); got != c.Detok {
			t.Errorf("%s detok %q: got %q want %q", c.ID, c.Text, got, c.Detok)
			ok = false
		}
		if got := tok.DecodeWith(c.IDsParseSpecial, DecodeOptions{UnparseSpecial: true}); got != c.DetokParseSpecial {
			t.Errorf("%s detok_parse_special %q: got %q want %q", c.ID, c.Text, got, c.DetokParseSpecial)
			ok = false
		}
		if (tok.Decode(c.IDs) == c.Text) != c.Roundtrip {
			t.Errorf("%s roundtrip of %q: got %v want %v", c.ID, c.Text, !c.Roundtrip, c.Roundtrip)
			ok = false
		}
		if ok {
			pass++
		}
	}
	t.Logf("%d/%d cases match", pass, len(cases))
}

func TestReferenceVocabs(t *testing.T) {
	for _, name := range vocabNames {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			cases := readRefCases(t, filepath.Join(repoRoot(t), "testdata", "vocab", "ggml-vocab-"+name+".json"))
			checkReference(t, tok, cases)
		})
	}
}

func TestReferenceModels(t *testing.T) {
	for _, name := range []string{"stories260K", "llama-2-tiny-random"} {
		t.Run(name, func(t *testing.T) {
			root := repoRoot(t)
			model := filepath.Join(root, "testdata", "models", name+".gguf")
			ref := filepath.Join(root, "testdata", "reference", name+".json")
			if _, err := os.Stat(model); err != nil {
				model = filepath.Join(root, "..", "shared", "models", name+".gguf")
				ref = filepath.Join(root, "..", "shared", "reference", name+".json")
			}
			if _, err := os.Stat(model); err != nil {
				t.Skipf("missing %s", model)
			}
			checkReference(t, loadGGUF(t, model), readRefCases(t, ref))
		})
	}
}
