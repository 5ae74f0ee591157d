package grammar

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// loadPieces reads a fixture vocabulary (testdata/vocab, or the shared
// copy for files too large to vendor) and returns its pieces as the
// runner would pass them: Piece(id, false), so control tokens are "" and
// byte-fallback tokens are their raw byte.
func loadPieces(tb testing.TB, name string) (*tokenizer.Tokenizer, []string) {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	base := "ggml-vocab-" + name + ".gguf"
	var path string
	for _, p := range []string{filepath.Join(root, "testdata", "vocab", base), filepath.Join(root, "..", "shared", "models", "vocab", base)} {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		tb.Skipf("missing %s", base)
	}
	f, err := gguf.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		tb.Fatal(err)
	}
	pieces := make([]string, tok.VocabSize())
	for id := range pieces {
		pieces[id] = tok.Piece(int32(id), false)
	}
	return tok, pieces
}

func TestPiecesOfByteTokens(t *testing.T) {
	tok, pieces := loadPieces(t, "llama-spm")
	// SentencePiece byte fallback: "<0x41>" decodes to the raw byte "A",
	// "▁" to a space; control tokens decode to nothing.
	for id := range pieces {
		text := tok.TokenText(int32(id))
		if strings.HasPrefix(text, "<0x") && len(text) == 6 && len(pieces[id]) != 1 {
			t.Fatalf("byte token %q has piece %q", text, pieces[id])
		}
	}
	if pieces[tok.BOS()] != "" || pieces[tok.EOS()] != "" {
		t.Errorf("control pieces %q %q, want empty", pieces[tok.BOS()], pieces[tok.EOS()])
	}
	seen := map[byte]bool{}
	for _, p := range pieces {
		if len(p) == 1 {
			seen[p[0]] = true
		}
	}
	if len(seen) != 256 {
		t.Errorf("%d of 256 bytes have a one-byte token", len(seen))
	}
}

func TestNewVocabErrors(t *testing.T) {
	if _, err := NewVocab(nil, nil); !errors.Is(err, ErrBadVocab) {
		t.Errorf("empty vocabulary: %v", err)
	}
	if _, err := NewVocab([]string{"a"}, []int32{1}); !errors.Is(err, ErrBadVocab) {
		t.Errorf("eog outside: %v", err)
	}
	if _, err := NewConstraint(JSONObject(), []string{"a"}, []int32{-1}); !errors.Is(err, ErrBadVocab) {
		t.Errorf("negative eog: %v", err)
	}
}

// trial reports whether c would accept id, leaving c unchanged.
func trial(c *Constraint, id int32) bool {
	st, done := c.state, c.done
	err := c.Accept(id)
	c.state, c.done = st, done
	return err == nil
}

// tokenWalk generates one document token by token with random allowed
// tokens, checking Mask against Accept on every step. Past soft tokens it
// steers towards the end the way byteWalk does.
func tokenWalk(t *testing.T, c *Constraint, pieces []string, eog []int32, rng *rand.Rand, soft, hard int) string {
	t.Helper()
	var text strings.Builder
	logits := make([]float32, len(pieces)+3) // a padded head
	var allowed []int32
	for step := 0; step < hard; step++ {
		allowed = c.Allowed(allowed[:0])
		for i := range logits {
			logits[i] = 0
		}
		c.Mask(logits)
		n := 0
		for i, l := range logits {
			if !math.IsInf(float64(l), -1) {
				n++
				if _, ok := slices.BinarySearch(allowed, int32(i)); !ok {
					t.Fatalf("Mask allows %d, Allowed does not", i)
				}
			}
		}
		if n != len(allowed) {
			t.Fatalf("Mask allows %d tokens, Allowed %d", n, len(allowed))
		}
		if len(allowed) == 0 {
			t.Fatalf("dead end after %q (done %v)", text.String(), c.Done())
		}
		// Mask agrees with Accept on a sample of tokens, allowed or not.
		for range 24 {
			id := int32(rng.IntN(len(pieces)))
			_, ok := slices.BinarySearch(allowed, id)
			if trial(c, id) != ok {
				t.Fatalf("after %q token %d %q: Mask says %v, Accept disagrees", text.String(), id, pieces[id], ok)
			}
		}
		if c.Done() {
			for _, id := range eog {
				if !slices.Contains(allowed, id) {
					t.Fatalf("complete but EOG %d masked", id)
				}
			}
		} else {
			for _, id := range eog {
				if slices.Contains(allowed, id) {
					t.Fatalf("EOG %d allowed before completion: %q", id, text.String())
				}
				if err := c.Accept(id); err == nil {
					t.Fatalf("EOG accepted before completion")
				}
			}
		}
		id := allowed[rng.IntN(len(allowed))]
		if step >= soft && rng.IntN(5) != 0 {
			if c.Done() {
				id = eog[0]
			} else if pref := closers(c.state, allowedBytes(c.state)); len(pref) > 0 {
				var short, any []int32
				for _, a := range allowed {
					if p := pieces[a]; p != "" && slices.Contains(pref, p[0]) {
						any = append(any, a)
						if len(p) == 1 {
							short = append(short, a)
						}
					}
				}
				switch {
				case len(short) > 0 && rng.IntN(5) != 0:
					id = short[rng.IntN(len(short))]
				case len(any) > 0:
					id = any[rng.IntN(len(any))]
				}
			}
		}
		if err := c.Accept(id); err != nil {
			t.Fatalf("after %q: allowed token %d %q refused: %v", text.String(), id, pieces[id], err)
		}
		if slices.Contains(eog, id) {
			if !c.Done() || !errors.Is(c.Accept(allowed[0]), ErrFinished) {
				t.Fatalf("after EOG: Done %v", c.Done())
			}
			if got := c.Allowed(nil); len(got) != 0 {
				t.Fatalf("after EOG %d tokens allowed", len(got))
			}
			return text.String()
		}
		text.WriteString(pieces[id])
	}
	t.Fatalf("no document within %d tokens: %q", hard, text.String())
	return ""
}

func TestTokenWalks(t *testing.T) {
	t.Run("llama-spm", func(t *testing.T) { tokenWalks(t, "llama-spm", 12) })
	// byte-level BPE, 152k tokens, many of them partial UTF-8
	t.Run("qwen2", func(t *testing.T) { tokenWalks(t, "qwen2", 2) })
}

func tokenWalks(t *testing.T, vocab string, walks int) {
	tok, pieces := loadPieces(t, vocab)
	v, err := NewVocab(pieces, tok.EOG())
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		walks = 1
	}
	for _, ts := range append(testSchemas, struct{ name, schema string }{"json-object", ""}) {
		t.Run(ts.name, func(t *testing.T) {
			m := JSONObject()
			if ts.schema != "" {
				m = mustCompile(t, ts.schema)
			}
			rng := rand.New(rand.NewPCG(7, uint64(len(ts.name))))
			for range walks {
				c := NewConstraintVocab(m, v)
				text := tokenWalk(t, c, pieces, tok.EOG(), rng, 25, 3000)
				if ok, complete := m.Prefix([]byte(text)); !ok || !complete {
					t.Fatalf("matcher refuses its own output %q", text)
				}
				if ts.schema == "" {
					if !strings.HasPrefix(text, "{") {
						t.Fatalf("json_object produced %q", text)
					}
					ts.schema = "{}"
				}
				if err := validateText(ts.schema, []byte(text)); err != nil {
					t.Fatalf("%q: %v", text, err)
				}
			}
		})
	}
}

func TestAcceptReject(t *testing.T) {
	pieces := []string{"{", "}", `"a"`, ":", "1", `{"`, "", "x", "<eos>"}
	m := mustCompile(t, `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`)
	c, err := NewConstraint(m, pieces, []int32{8})
	if err != nil {
		t.Fatal(err)
	}
	var re *RejectError
	if err := c.Accept(7); !errors.As(err, &re) || re.Offset != 0 {
		t.Fatalf("x at start: %v", err)
	}
	if err := c.Accept(6); !errors.As(err, &re) || re.Offset != -1 {
		t.Fatalf("empty piece: %v", err)
	}
	if err := c.Accept(99); !errors.As(err, &re) {
		t.Fatalf("id outside: %v", err)
	}
	if err := c.Accept(8); !errors.As(err, &re) {
		t.Fatalf("eos at start: %v", err)
	}
	for _, id := range []int32{0, 2, 3} {
		if err := c.Accept(id); err != nil {
			t.Fatalf("token %d: %v", id, err)
		}
	}
	if err := c.Accept(1); err == nil {
		t.Fatalf("} before the value accepted")
	}
	if got := c.Allowed(nil); !slices.Equal(got, []int32{4}) {
		t.Fatalf("allowed after {\"a\": %v, want [4]", got)
	}
	for _, id := range []int32{4, 1} {
		if err := c.Accept(id); err != nil {
			t.Fatalf("token %d: %v", id, err)
		}
	}
	if !c.Done() || !slices.Equal(c.Allowed(nil), []int32{8}) {
		t.Fatalf("complete: Done %v allowed %v", c.Done(), c.Allowed(nil))
	}
	if err := c.Accept(8); err != nil || !errors.Is(c.Accept(8), ErrFinished) {
		t.Fatalf("eos: %v", err)
	}
}

// TestWithSampler runs the constraint inside the real sampler with random
// logits: the draws must spell a valid document.
func TestWithSampler(t *testing.T) {
	tok, pieces := loadPieces(t, "llama-spm")
	v, err := NewVocab(pieces, tok.EOG())
	if err != nil {
		t.Fatal(err)
	}
	schema := testSchemas[11].schema // openai-strict
	m := mustCompile(t, schema)
	rng := rand.New(rand.NewPCG(3, 4))
	closing := make([]bool, len(pieces))
	for id, p := range pieces {
		closing[id] = strings.ContainsAny(p, `"]}`)
	}
	for seed := range uint64(5) {
		c := NewConstraintVocab(m, v)
		s := sample.New(sample.Params{Temperature: 1, TopK: 40, Seed: seed}, len(pieces))
		s.SetConstraint(c)
		logits := make([]float32, len(pieces))
		var text strings.Builder
		var history []int32
		for step := 0; ; step++ {
			if step > 2000 {
				t.Fatalf("no document: %q", text.String())
			}
			for i := range logits {
				logits[i] = float32(rng.NormFloat64())
				if step > 20 && closing[i] {
					logits[i] += 6
				}
			}
			if step > 20 {
				for _, id := range tok.EOG() {
					logits[id] += 20
				}
			}
			id := s.Sample(logits, history)
			if err := c.Accept(id); err != nil {
				t.Fatalf("sampler drew a masked token: %v", err)
			}
			if tok.IsEOG(id) {
				break
			}
			history = append(history, id)
			text.WriteString(pieces[id])
		}
		if err := validateText(schema, []byte(text.String())); err != nil {
			t.Fatalf("%q: %v", text.String(), err)
		}
	}
}
