// Package sample picks the next token from a logits vector: greedy argmax,
// or temperature sampling after repetition/presence/frequency penalties and
// top-k, top-p and min-p truncation, in llama.cpp's order. It also computes
// log-probabilities over the full vocabulary for the logprobs API fields.
//
// The package is pure: it reads no clock and no global randomness. Each
// Sampler owns a PCG generator seeded from Params.Seed, so the same seed,
// logits and history give the same tokens. A Sampler is not safe for
// concurrent use; give each generation its own. It imports only the standard
// library.
package sample

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// DefaultRepeatLastN is the penalty window used when Params.RepeatLastN is 0;
// it is llama.cpp's and Ollama's default.
const DefaultRepeatLastN = 64

// Params are the sampling settings of one generation. The zero value is
// greedy decoding with every filter and penalty off.
type Params struct {
	// Temperature divides the logits before the draw; 0 means greedy argmax.
	Temperature float32
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP; 0 or 1 is off.
	TopP float32
	// MinP drops tokens whose probability is below MinP times the most likely
	// token's; 0 is off.
	MinP float32
	// TopK keeps the K most likely tokens; 0 is off.
	TopK int
	// RepeatPenalty divides positive logits and multiplies negative ones of
	// tokens seen in the window; 0 or 1 is off.
	RepeatPenalty float32
	// PresencePenalty is subtracted once from the logit of every token seen
	// in the window; FrequencyPenalty is subtracted once per occurrence.
	PresencePenalty, FrequencyPenalty float32
	// RepeatLastN is the penalty window in tokens: 0 means
	// DefaultRepeatLastN, -1 the whole history.
	RepeatLastN int
	// Seed seeds the Sampler's generator.
	Seed uint64
}

// ErrInvalidParams is matched (errors.Is) by every *ParamError.
var ErrInvalidParams = errors.New("sample: invalid sampling parameters")

// ParamError names one out-of-range sampling parameter.
type ParamError struct {
	Field string // the Params field name
	Value string // the value given, formatted
	Want  string // the accepted range, in words
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("sample: %s = %s is out of range; use %s", e.Field, e.Value, e.Want)
}

// Is makes errors.Is(err, ErrInvalidParams) true.
func (e *ParamError) Is(target error) bool { return target == ErrInvalidParams }

// Validate reports the first out-of-range field as a *ParamError.
func (p Params) Validate() error {
	f := func(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0:
		return &ParamError{"Temperature", f(p.Temperature), "a finite value >= 0 (0 is greedy)"}
	case !finite(p.TopP) || p.TopP < 0 || p.TopP > 1:
		return &ParamError{"TopP", f(p.TopP), "a value in [0, 1] (0 or 1 turns it off)"}
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return &ParamError{"MinP", f(p.MinP), "a value in [0, 1] (0 turns it off)"}
	case p.TopK < 0:
		return &ParamError{"TopK", strconv.Itoa(p.TopK), "a value >= 0 (0 turns it off)"}
	case !finite(p.RepeatPenalty) || p.RepeatPenalty < 0:
		return &ParamError{"RepeatPenalty", f(p.RepeatPenalty), "a finite value >= 0 (0 or 1 turns it off)"}
	case !finite(p.PresencePenalty):
		return &ParamError{"PresencePenalty", f(p.PresencePenalty), "a finite value (0 turns it off)"}
	case !finite(p.FrequencyPenalty):
		return &ParamError{"FrequencyPenalty", f(p.FrequencyPenalty), "a finite value (0 turns it off)"}
	case p.RepeatLastN < -1:
		return &ParamError{"RepeatLastN", strconv.Itoa(p.RepeatLastN), "-1 (whole history), 0 (default 64) or a positive window"}
	}
	return nil
}
