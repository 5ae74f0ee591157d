package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// GenerateParams control one generation.
type GenerateParams struct {
	MaxTokens int // 0 = until end of generation or the context is full
	Sample    sample.Params
	// Context caps prompt plus generated tokens; 0 = the model's trained length.
	Context int
}

// Token is one generated token and the text it completes. Text may be empty
// while a multi-byte character is still incomplete.
type Token struct {
	ID   int32
	Text string
}

// Finish reasons.
const (
	FinishStop   = "stop"   // an end-of-generation token
	FinishLength = "length" // MaxTokens or the context window reached
)

// Stats describe a finished generation.
type Stats struct {
	PromptTokens    int
	GeneratedTokens int
	FinishReason    string
	Prefill         time.Duration
	Decode          time.Duration // from the first sampled token to the last
}

// PrefillTokensPerSecond is the prompt processing rate.
func (s Stats) PrefillTokensPerSecond() float64 {
	return rate(s.PromptTokens, s.Prefill)
}

// DecodeTokensPerSecond is the generation rate after the first token.
func (s Stats) DecodeTokensPerSecond() float64 {
	return rate(s.GeneratedTokens-1, s.Decode)
}

func rate(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// ErrEmptyPrompt is returned for a prompt with no tokens.
var ErrEmptyPrompt = errors.New("engine: the prompt has no tokens")

// Generate runs prompt through the model and samples up to MaxTokens tokens,
// calling emit for each. An end-of-generation token ends the loop and is not
// emitted. emit returning an error, or ctx ending, stops the generation.
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
	if len(prompt) >= ctxLen {
		return st, fmt.Errorf("engine: the prompt has %d tokens, which fills the %d-token context", len(prompt), ctxLen)
	}
	budget := ctxLen - len(prompt)
	if p.MaxTokens > 0 && p.MaxTokens < budget {
		budget = p.MaxTokens
	}
	cache := m.Shard.NewCache(len(prompt) + budget)
	sampler := sample.New(p.Sample, m.Config.NVocab)
	dec := tokenizer.NewStreamDecoder(m.Tok)

	start := time.Now()
	res, err := m.Shard.Forward(cache, model.Batch{Tokens: prompt})
	if err != nil {
		return st, err
	}
	st.Prefill = time.Since(start)
	var history []int32
	decodeStart := time.Now()
	st.FinishReason = FinishLength
	for st.GeneratedTokens < budget {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		id := sampler.Sample(res.Logits, history)
		if st.GeneratedTokens == 0 {
			decodeStart = time.Now()
		}
		if m.Tok.IsEOG(id) {
			st.FinishReason = FinishStop
			break
		}
		history = append(history, id)
		st.GeneratedTokens++
		if err := emit(Token{ID: id, Text: dec.Push(id)}); err != nil {
			return st, err
		}
		if st.GeneratedTokens == budget {
			break
		}
		if res, err = m.Shard.Forward(cache, model.Batch{Tokens: []int32{id}}); err != nil {
			return st, err
		}
	}
	st.Decode = time.Since(decodeStart)
	if tail := dec.Flush(); tail != "" {
		if err := emit(Token{ID: -1, Text: tail}); err != nil {
			return st, err
		}
	}
	return st, nil
}
