package prompt

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/engine/grammar"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tokenizer"
	"github.com/skulk/skulk/internal/serving/request"
)

// petSchema is a bounded schema of most features the grammar supports.
const petSchema = `{"type":"object","properties":{
		"name":{"type":"string","maxLength":12},
		"mood":{"enum":["happy","sad","angry"]},
		"ok":{"type":"boolean"},
		"friends":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":3},
		"tags":{"type":"array","items":{"enum":["a","b"]},"minItems":1,"maxItems":4},
		"note":{"type":["string","null"],"maxLength":6},
		"kind":{"type":"object","properties":{"species":{"enum":["cat","dog"]},"legs":{"enum":[2,4]}},
			"required":["species","legs"],"additionalProperties":false}},
		"required":["name","mood","ok","friends","tags","note","kind"],"additionalProperties":false}`

// TestGrammarVocabStories260K checks the vocabulary assumption the mask
// rests on, on stories260K: every byte is a token whose piece is that byte
// (so no grammar state is a dead end), control and unknown tokens have
// empty pieces (never allowed inside a value), and a token's piece is what
// the streamer sends for it.
func TestGrammarVocabStories260K(t *testing.T) {
	l := openModel(t, "")
	tok := l.M.Tok
	single := map[byte]bool{}
	for id := range int32(tok.VocabSize()) {
		p := tok.Piece(id, false)
		if len(p) == 1 {
			single[p[0]] = true
		}
		if tok.IsControl(id) && p != "" {
			t.Errorf("control token %d has piece %q", id, p)
		}
	}
	if len(single) != 256 {
		t.Fatalf("%d of the 256 bytes are single-byte tokens", len(single))
	}
	if bos, eos := tok.BOS(), tok.EOS(); tok.Piece(bos, false) != "" || tok.Piece(eos, false) != "" || !tok.IsEOG(eos) {
		t.Fatalf("BOS %d %q, EOS %d %q (EOG %v)", bos, tok.Piece(bos, false), eos, tok.Piece(eos, false), tok.EOG())
	}
	v, err := grammarVocab(l)
	if err != nil {
		t.Fatal(err)
	}
	if v2, _ := grammarVocab(l); v2 != v || v.Size() != tok.VocabSize() {
		t.Fatalf("the vocabulary is rebuilt (%p, %p) or has %d tokens, want %d", v, v2, v.Size(), tok.VocabSize())
	}
	// At the start of a json_object only tokens that begin with '{' are
	// allowed, and every one of them is.
	con := grammar.NewConstraintVocab(grammar.JSONObject(), v)
	allowed := con.Allowed(nil)
	for id := range int32(tok.VocabSize()) {
		p := tok.Piece(id, false)
		want := strings.HasPrefix(p, "{")
		if slices.Contains(allowed, id) != want {
			t.Fatalf("token %d %q: allowed %v, want %v", id, p, !want, want)
		}
	}
	if len(allowed) == 0 {
		t.Fatal("no token may start an object")
	}
}

// BenchmarkMask isolates what a constraint adds to each token: it records
// the logits of a constrained generation on stories260K once, then times
// sampling from them with and without the grammar (Mask inside Sample, and
// Accept), and Mask and Accept alone, each generation with a fresh
// Constraint as a task has. The per-token overhead is the difference of
// ns/token, or mask_accept_only's ns/token.
func BenchmarkMask(b *testing.B) {
	l := openModel(b, "")
	v, err := grammarVocab(l)
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range []struct{ name, schema string }{{"json_object", `{}`}, {"schema", petSchema}} {
		m, err := compileSchema(json.RawMessage(sc.schema))
		if err != nil {
			b.Fatal(err)
		}
		params := samplingParams(request.Sampling{Temperature: new(1.0), Seed: new(uint64(7))}, nil)
		logits, ids := recordConstrained(b, l, m, v, params, 128)
		b.Run(sc.name+"/free", func(b *testing.B) {
			for range b.N {
				s := sample.New(params, len(logits[0]))
				for i := range ids {
					s.Sample(logits[i], ids[:i])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
		})
		b.Run(sc.name+"/mask_accept_only", func(b *testing.B) {
			work := make([]float32, len(logits[0]))
			for range b.N {
				con := grammar.NewConstraintVocab(m, v)
				for i, id := range ids {
					copy(work, logits[i])
					con.Mask(work)
					if err := con.Accept(id); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
		})
		b.Run(sc.name+"/masked", func(b *testing.B) {
			for range b.N {
				s := sample.New(params, len(logits[0]))
				con := grammar.NewConstraintVocab(m, v)
				s.SetConstraint(con)
				for i, id := range ids {
					if got := s.Sample(logits[i], ids[:i]); got != id {
						b.Fatalf("step %d: sampled %d, recorded %d", i, got, id)
					}
					if err := con.Accept(id); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
		})
	}
}

// recordConstrained generates up to n tokens of "Once upon a time" under
// m and returns each step's logits and the token drawn.
func recordConstrained(b *testing.B, l *Model, m *grammar.Matcher, v *grammar.Vocab, p sample.Params, n int) ([][]float32, []int32) {
	prompt := l.M.Tok.Encode("Once upon a time", tokenizer.EncodeOptions{AddSpecial: true})
	cache := l.M.Shard.NewCache(len(prompt) + n)
	s := sample.New(p, l.M.Config.NVocab)
	con := grammar.NewConstraintVocab(m, v)
	s.SetConstraint(con)
	res, err := l.M.Shard.Forward(cache, model.Batch{Tokens: prompt})
	if err != nil {
		b.Fatal(err)
	}
	var logits [][]float32
	var ids []int32
	for len(ids) < n {
		id := s.Sample(res.Logits, ids)
		if err := con.Accept(id); err != nil {
			b.Fatal(err)
		}
		logits, ids = append(logits, slices.Clone(res.Logits)), append(ids, id)
		if l.M.Tok.IsEOG(id) {
			break
		}
		if res, err = l.M.Shard.Forward(cache, model.Batch{Tokens: []int32{id}}); err != nil {
			b.Fatal(err)
		}
	}
	return logits, ids
}
