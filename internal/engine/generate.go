package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// GenerateParams control one generation. The zero hooks give plain
// generation (the CLI's); the runner sets them to add its protocol.
type GenerateParams struct {
	MaxTokens int // 0 = until end of generation or the context is full
	Sample    sample.Params
	// Context caps prompt plus generated tokens; 0 = the model's trained length.
	Context int
	// Constraint, when set, masks the tokens that may not come next before
	// each draw and is told every token drawn, end of generation included
	// (a grammar, for structured output).
	Constraint Constraint
	// Step, when set, runs each decode step instead of Shard.Forward: it
	// appends tok to cache's sequence and returns the logits after it,
	// valid until the next step. It must give Forward's logits bit for bit
	// (the runner batches its tasks' steps this way).
	Step func(cache *model.Cache, tok int32) ([]float32, error)
	// Draft, when set, makes the loop speculate (speculate.go): drafted
	// tokens are verified in one batched forward pass and those the
	// sampler draws anyway are taken without a step of their own. Greedy
	// and sampled generations without a Constraint speculate; the output
	// is the same as without Draft, token for token (for a seed).
	Draft Drafter
	// DraftMax caps the tokens drafted per pass; 0 = DefaultDraftMax.
	DraftMax int
	// Prefill, when set, runs the prompt instead of a new cache and one
	// Forward: it returns the cache Step is given (the sequence's, holding
	// the prompt, of at most capacity positions; nil for a Step that keeps
	// its own) and the logits after the prompt. It must give Forward's
	// logits bit for bit (the runner reads prompts in chunks between other
	// sequences' steps, and reuses cached prefixes).
	Prefill func(prompt []int32, capacity int) (*model.Cache, []float32, error)
	// Preserved, indexed by token id, marks control tokens whose text the
	// stream keeps (a chat dialect's markers); the rest decode to nothing,
	// as in llama_detokenize without special tokens. Nil keeps none.
	Preserved []bool
}

// Constraint restricts what may be generated; grammar.Constraint is one.
type Constraint = sequence.Constraint

// Token is one generated token and the text it completes. Text is the
// token's piece as a server streams it (no leading space removed); it may
// be empty while a multi-byte character is incomplete, and bytes that are
// not UTF-8 become U+FFFD. After the last token, a Token with ID -1 carries
// any text still held back.
type Token struct {
	ID   int32
	Text string
	// Logits are the model's scores ID was drawn from (before any
	// constraint or penalty); valid only during the emit call.
	Logits []float32
}

// Finish reasons, as every sequencer's.
const (
	FinishStop   = sequence.FinishStop   // an end-of-generation token, or emit returned ErrStop
	FinishLength = sequence.FinishLength // MaxTokens or the context window reached
)

// Stats describe a finished generation.
type Stats = sequence.Stats

// Errors of Generate.
var (
	// ErrEmptyPrompt is returned for a prompt with no tokens.
	ErrEmptyPrompt = errors.New("engine: the prompt has no tokens")
	// ErrNoToken is returned when the sampler has nothing to draw: every
	// logit is NaN or -Inf (a constraint masked them all, say).
	ErrNoToken = errors.New("engine: the sampler found no token to draw (logits are all NaN or -Inf)")
	// ErrStop, returned by emit, ends the generation after that token as an
	// end-of-generation token would: finish reason "stop" and no error.
	// The runner's stop sequences use it.
	ErrStop = sequence.ErrStop
)

// Generate runs prompt through the model and samples up to MaxTokens tokens,
// calling emit for each. An end-of-generation token ends the loop and is not
// emitted. emit returning ErrStop ends the generation; any other error, or
// ctx ending, stops it with that error. The Stats count what was done even
// then. It is the loop of a model held whole in this process (`skulk
// generate`, and the runner's local sequencer); sequence.Budget and
// sequence.Judge decide where it ends, as they do for a pipeline's head.
func (m *Model) Generate(ctx context.Context, prompt []int32, p GenerateParams, emit func(Token) error) (Stats, error) {
	st := Stats{PromptTokens: len(prompt)}
	if len(prompt) == 0 {
		return st, ErrEmptyPrompt
	}
	if !m.Shard.Range.First || !m.Shard.Range.Last {
		return st, fmt.Errorf("engine: generation needs the whole model, not a shard")
	}
	if err := p.Sample.Validate(); err != nil {
		return st, err
	}
	ctxLen := p.Context
	if ctxLen <= 0 {
		ctxLen = m.Config.ContextLength
	}
	budget, err := sequence.Budget(len(prompt), p.MaxTokens, ctxLen)
	if err != nil {
		return st, fmt.Errorf("engine: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	step := p.Step
	if step == nil {
		step = func(c *model.Cache, tok int32) ([]float32, error) {
			r, err := m.Shard.Forward(c, model.Batch{Tokens: []int32{tok}})
			return r.Logits, err
		}
	}
	prefill := p.Prefill
	if prefill == nil {
		prefill = func(prompt []int32, capacity int) (*model.Cache, []float32, error) {
			c := m.Shard.NewCache(capacity)
			r, err := m.Shard.Forward(c, model.Batch{Tokens: prompt})
			return c, r.Logits, err
		}
	}
	sampler := sample.New(p.Sample, m.Config.NVocab)
	if p.Constraint != nil {
		sampler.SetConstraint(p.Constraint)
	}
	text := textStream{tok: m.Tok, preserved: p.Preserved}

	start := time.Now()
	cache, logits, err := prefill(prompt, len(prompt)+budget)
	if err != nil {
		return st, fmt.Errorf("engine: prefill: %w", err)
	}
	st.Prefill = time.Since(start)
	var history []int32
	spec := speculation{}
	// Speculation is exact for sampled generations too: each token is
	// still drawn from its own position's logits, by the same sampler and
	// random stream; a draft only saves the steps whose tokens it guessed
	// (a guess of token x is taken with the probability the sampler gives
	// x, rejection sampling's rate for a drafter that proposes one token).
	if p.Draft != nil && p.Constraint == nil && cache != nil {
		spec = speculation{d: p.Draft, max: p.DraftMax, seq: slices.Clone(prompt)}
		if spec.max <= 0 {
			spec.max = DefaultDraftMax
		}
	}
	decodeStart := time.Now()
	st.FinishReason = FinishLength
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		id := sampler.Sample(logits, history)
		if id == sample.NoToken {
			return st, ErrNoToken
		}
		// With a verified draft pending, a draw equal to its next token
		// was computed already: its logits are the next row.
		next, ok, err := spec.take(cache, id)
		if err != nil {
			return st, fmt.Errorf("engine: speculative decoding: %w", err)
		}
		if ok {
			st.DraftAccepted++
		}
		if st.GeneratedTokens == 0 {
			decodeStart = time.Now()
		}
		if p.Constraint != nil {
			if err := p.Constraint.Accept(id); err != nil {
				return st, fmt.Errorf("engine: constrained decoding sampled a token the grammar refuses: %w", err)
			}
		}
		verdict := sequence.Judge(m.Tok.IsEOG(id), st.GeneratedTokens, budget)
		if verdict == sequence.EndOfGeneration {
			st.FinishReason = FinishStop
			break
		}
		history = append(history, id)
		st.GeneratedTokens++
		if err := emit(Token{ID: id, Text: text.push(id), Logits: logits}); err != nil {
			if errors.Is(err, ErrStop) {
				st.FinishReason = FinishStop
				break
			}
			return st, err
		}
		if verdict == sequence.Last {
			break
		}
		if ok {
			logits = next
			continue
		}
		if spec.d != nil {
			spec.seq = append(spec.seq, id)
			n, rows, err := spec.verify(m.Shard, cache, id, budget-st.GeneratedTokens)
			if err != nil {
				return st, fmt.Errorf("engine: speculative decoding: %w", err)
			}
			if n > 0 {
				st.DraftTokens += n
				logits = rows
				continue
			}
		}
		if logits, err = step(cache, id); err != nil {
			return st, fmt.Errorf("engine: decode: %w", err)
		}
	}
	st.Decode = time.Since(decodeStart)
	if tail := text.flush(); tail != "" {
		if err := emit(Token{ID: -1, Text: tail}); err != nil && !errors.Is(err, ErrStop) {
			return st, err
		}
	}
	return st, nil
}

// EncodePrompt tokenizes a prompt as the server does: special tokens added
// and parsed, and a template that writes the BOS text itself not given a
// second BOS.
func (m *Model) EncodePrompt(text string) []int32 {
	ids := m.Tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if bos := m.Tok.BOS(); len(ids) >= 2 && bos >= 0 && ids[0] == bos && ids[1] == bos {
		ids = ids[1:]
	}
	return ids
}

// textStream turns generated tokens into text as llama-server streams it:
// each token's piece, held back while a UTF-8 character is incomplete;
// control tokens only when preserved.
type textStream struct {
	tok       *tokenizer.Tokenizer
	preserved []bool
	pending   []byte
}

func (s *textStream) push(id int32) string {
	keep := id >= 0 && int(id) < len(s.preserved) && s.preserved[id]
	s.pending = append(s.pending, s.tok.Piece(id, keep)...)
	cut := utf8Cut(s.pending)
	text := strings.ToValidUTF8(string(s.pending[:cut]), "\uFFFD")
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return text
}

func (s *textStream) flush() string {
	text := strings.ToValidUTF8(string(s.pending), "\uFFFD")
	s.pending = s.pending[:0]
	return text
}

// utf8Cut returns len(b), or where a trailing incomplete UTF-8 sequence
// starts.
func utf8Cut(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}
