package request

import (
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
)

func f(v float64) *float64 { return &v }

func TestValidate(t *testing.T) {
	ok := Request{Model: "m", Chat: true, Messages: []Message{{Role: RoleUser, Content: "hi"}}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *Request){
		"model":             func(r *Request) { r.Model = "" },
		"messages":          func(r *Request) { r.Messages = nil },
		"role":              func(r *Request) { r.Messages[0].Role = "robot" },
		"max_tokens":        func(r *Request) { r.Sampling.MaxTokens = -1 },
		"temperature":       func(r *Request) { r.Sampling.Temperature = f(3) },
		"top_p":             func(r *Request) { r.Sampling.TopP = f(1.5) },
		"top_k":             func(r *Request) { r.Sampling.TopK = -2 },
		"stop":              func(r *Request) { r.Sampling.Stop = []string{""} },
		"top_logprobs":      func(r *Request) { r.Sampling.TopLogprobs = 21 },
		"frequency_penalty": func(r *Request) { r.Sampling.FrequencyPenalty = 9 },
	}
	for name, mutate := range cases {
		r := ok
		r.Messages = append([]Message(nil), ok.Messages...)
		mutate(&r)
		err := r.Validate()
		if fault.ClassOf(err) != fault.ClassInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}
