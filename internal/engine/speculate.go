package engine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/skulk/skulk/internal/engine/model"
)

// Speculative decoding: a drafter guesses the next few tokens, one batched
// forward pass computes the logits after each of them, and every guess the
// sampler would have drawn anyway is accepted; the first that differs is
// replaced by the sampler's own draw and the K/V of the rest is dropped.
// The model sees exactly the tokens it would have seen one step at a time,
// so the output is the same; only the number of passes changes. Generate
// speculates only when sampling is greedy (temperature 0) and no constraint
// is set: a random draw would need rejection sampling to keep its
// distribution, and a grammar would have to be rewound with the cache.

// DefaultDraftMax is how many tokens are drafted per verification pass
// when GenerateParams.DraftMax is 0.
const DefaultDraftMax = 8

// Drafter proposes up to n tokens to follow seq (the prompt and every token
// generated so far). It may return fewer, or none.
type Drafter interface {
	Draft(seq []int32, n int) ([]int32, error)
}

// PromptLookup drafts by n-gram lookup in the sequence itself (prompt
// lookup decoding, llama.cpp's lookup): it finds the latest earlier
// occurrence of the sequence's last MaxNGram tokens (then of fewer, down to
// MinNGram) and proposes what followed it. It needs no draft model and
// pays off when the output repeats its input: code edits, quoting,
// extraction.
type PromptLookup struct {
	MinNGram, MaxNGram int // 0: DefaultMinNGram, DefaultMaxNGram
}

// N-gram sizes PromptLookup tries by default.
const (
	DefaultMinNGram = 2
	DefaultMaxNGram = 4
)

// Draft implements Drafter.
func (p PromptLookup) Draft(seq []int32, n int) ([]int32, error) {
	lo, hi := p.MinNGram, p.MaxNGram
	if lo <= 0 {
		lo = DefaultMinNGram
	}
	if hi <= 0 {
		hi = DefaultMaxNGram
	}
	for g := min(hi, len(seq)-1); g >= lo; g-- {
		tail := seq[len(seq)-g:]
		// The latest match whose continuation is in seq.
		for i := len(seq) - g - 1; i >= 0; i-- {
			if slices.Equal(seq[i:i+g], tail) {
				next := seq[i+g : min(i+g+n, len(seq))]
				return slices.Clone(next), nil
			}
		}
	}
	return nil, nil
}

// ErrDraftVocab is matched (errors.Is) by the error NewDraftModel returns
// for a draft model whose vocabulary is not the target's.
var ErrDraftVocab = errors.New("engine: the draft model's vocabulary differs from the model's")

// DraftModel drafts with a smaller model of the same vocabulary, greedily.
// It keeps its own K/V cache of the sequence, rewound to the common prefix
// on each call, so a draft costs one pass per drafted token plus one for
// the tokens accepted since the last call. It is not safe for concurrent
// use: one per generation.
type DraftModel struct {
	m     *Model
	cache *model.Cache
	seen  []int32 // the tokens in cache
}

// NewDraftModel returns a drafter over d for generations of target of up to
// capacity tokens, or an error wrapping ErrDraftVocab when d's vocabulary
// is not target's token for token.
func NewDraftModel(target, d *Model, capacity int) (*DraftModel, error) {
	if err := SameVocab(target, d); err != nil {
		return nil, err
	}
	if !d.Shard.Range.First || !d.Shard.Range.Last {
		return nil, fmt.Errorf("engine: a draft model must be whole, not a shard")
	}
	return &DraftModel{m: d, cache: d.Shard.NewCache(min(capacity, d.Config.ContextLength))}, nil
}

// SameVocab reports, wrapping ErrDraftVocab, how d's vocabulary differs
// from m's: its size, a token's text, or the special tokens.
func SameVocab(m, d *Model) error {
	nm, nd := m.Tok.VocabSize(), d.Tok.VocabSize()
	if nm != nd || m.Config.NVocab != d.Config.NVocab {
		return fmt.Errorf("%w: %d tokens against %d (logits %d against %d)", ErrDraftVocab, nd, nm, d.Config.NVocab, m.Config.NVocab)
	}
	for id := range int32(nm) {
		if a, b := m.Tok.Piece(id, true), d.Tok.Piece(id, true); a != b {
			return fmt.Errorf("%w: token %d is %q in the draft model, %q in the model", ErrDraftVocab, id, b, a)
		}
	}
	if m.Tok.BOS() != d.Tok.BOS() {
		return fmt.Errorf("%w: BOS is %d in the draft model, %d in the model", ErrDraftVocab, d.Tok.BOS(), m.Tok.BOS())
	}
	return nil
}

// Draft implements Drafter: it feeds the draft model what it has not seen
// of seq and then greedily continues it n tokens.
func (d *DraftModel) Draft(seq []int32, n int) ([]int32, error) {
	common := 0
	for common < min(len(d.seen), len(seq)-1) && d.seen[common] == seq[common] {
		common++
	}
	if err := d.cache.Truncate(common); err != nil {
		return nil, err
	}
	d.seen = d.seen[:common]
	n = min(n, d.cache.Cap()-len(seq))
	if n <= 0 {
		return nil, nil
	}
	r, err := d.m.Shard.Forward(d.cache, model.Batch{Tokens: seq[common:]})
	if err != nil {
		return nil, err
	}
	d.seen = append(d.seen, seq[common:]...)
	var out []int32
	for {
		id := argmax(r.Logits)
		out = append(out, id)
		if len(out) == n || d.m.Tok.IsEOG(id) {
			return out, nil
		}
		if r, err = d.m.Shard.Forward(d.cache, model.Batch{Tokens: []int32{id}}); err != nil {
			return nil, err
		}
		d.seen = append(d.seen, id)
	}
}

// argmax is the first index of the largest value.
func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// speculation is Generate's speculative state: the sequence so far, and a
// verified draft whose logits rows are still to be consumed.
type speculation struct {
	d     Drafter // nil: not speculating
	max   int
	seq   []int32   // the prompt and the tokens generated, for the drafter
	draft []int32   // the drafted tokens not yet matched
	rows  []float32 // logits after each drafted token, aliasing the cache's scratch
	base  int       // the cache length before the first drafted token
	nv    int
}

// verify feeds id and a fresh draft of up to room-1 tokens through the
// model in one pass. It returns how many tokens were drafted (0: nothing
// was fed, the caller steps as usual) and the logits after id.
func (s *speculation) verify(sh *model.Shard, cache *model.Cache, id int32, room int) (int, []float32, error) {
	n := min(s.max, room-1)
	if n <= 0 {
		return 0, nil, nil
	}
	draft, err := s.d.Draft(s.seq, n)
	if err != nil || len(draft) == 0 {
		return 0, nil, err
	}
	draft = draft[:min(len(draft), n)]
	toks := append(append(make([]int32, 0, 1+len(draft)), id), draft...)
	s.base = cache.Len() + 1
	r, err := sh.Forward(cache, model.Batch{Tokens: toks, AllLogits: true})
	if err != nil {
		return 0, nil, err
	}
	s.nv = sh.Config.NVocab
	s.draft, s.rows = draft, r.Logits[s.nv:]
	return len(draft), r.Logits[:s.nv], nil
}

// take reports whether id, just drawn, is the pending draft's next token,
// and if so returns the logits after it. Otherwise it drops the rest of the
// draft from the cache, so the caller feeds id as usual.
func (s *speculation) take(cache *model.Cache, id int32) ([]float32, bool, error) {
	if len(s.draft) == 0 {
		return nil, false, nil
	}
	if s.draft[0] == id {
		logits := s.rows[:s.nv]
		s.draft, s.rows = s.draft[1:], s.rows[s.nv:]
		s.base++
		s.seq = append(s.seq, id)
		return logits, true, nil
	}
	s.draft = nil
	return nil, false, cache.Truncate(s.base)
}
