package request

import (
	"math"

	"github.com/skulk/skulk/internal/platform/fault"
)

// Validate checks the ranges every format shares; formats check their own
// required fields first.
func (r *Request) Validate() error {
	if r.Model == "" {
		return fault.ParamErrorf("model", "model is required")
	}
	if r.Chat && len(r.Messages) == 0 {
		return fault.ParamErrorf("messages", "messages must hold at least one message")
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		default:
			return fault.ParamErrorf("messages", "messages[%d].role %s is not one of system, user, assistant, tool", i, fault.Quote(m.Role))
		}
	}
	s := r.Sampling
	switch {
	case s.MaxTokens < 0:
		return fault.ParamErrorf("max_tokens", "max_tokens must be positive, got %d", s.MaxTokens)
	case s.Temperature != nil && (math.IsNaN(*s.Temperature) || *s.Temperature < 0 || *s.Temperature > 2):
		return fault.ParamErrorf("temperature", "temperature must be between 0 and 2")
	case s.TopP != nil && (math.IsNaN(*s.TopP) || *s.TopP < 0 || *s.TopP > 1):
		return fault.ParamErrorf("top_p", "top_p must be between 0 and 1")
	case s.TopK < 0:
		return fault.ParamErrorf("top_k", "top_k must not be negative")
	case math.IsNaN(s.MinP) || s.MinP < 0 || s.MinP > 1:
		return fault.ParamErrorf("min_p", "min_p must be between 0 and 1")
	case math.IsNaN(s.PresencePenalty) || s.PresencePenalty < -2 || s.PresencePenalty > 2:
		return fault.ParamErrorf("presence_penalty", "presence_penalty must be between -2 and 2")
	case math.IsNaN(s.FrequencyPenalty) || s.FrequencyPenalty < -2 || s.FrequencyPenalty > 2:
		return fault.ParamErrorf("frequency_penalty", "frequency_penalty must be between -2 and 2")
	case math.IsNaN(s.RepeatPenalty) || s.RepeatPenalty < 0:
		return fault.ParamErrorf("repeat_penalty", "repeat_penalty must not be negative")
	case s.RepeatLastN != nil && *s.RepeatLastN < -1:
		return fault.ParamErrorf("repeat_last_n", "repeat_last_n must be -1 (the whole answer), 0 (penalties off) or a positive window")
	case len(s.Stop) > MaxStopSequences:
		return fault.ParamErrorf("stop", "at most %d stop sequences are allowed", MaxStopSequences)
	case s.TopLogprobs < 0 || s.TopLogprobs > MaxTopLogprobs:
		return fault.ParamErrorf("top_logprobs", "top_logprobs must be between 0 and %d", MaxTopLogprobs)
	}
	for _, st := range s.Stop {
		if st == "" {
			return fault.ParamErrorf("stop", "stop sequences must not be empty")
		}
	}
	return nil
}
