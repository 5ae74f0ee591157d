package prompt

import (
	"testing"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/serving/request"
)

func TestSamplingParams(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	seed := uint64(42)
	tests := []struct {
		name       string
		in         request.Sampling
		temp, topP float32
		seed       uint64
	}{
		{name: "defaults", in: request.Sampling{}, temp: request.DefaultTemperature, topP: request.DefaultTopP, seed: 7},
		{name: "greedy", in: request.Sampling{Temperature: f(0)}, temp: 0, topP: request.DefaultTopP, seed: 7},
		{name: "explicit", in: request.Sampling{Temperature: f(1.3), TopP: f(1), Seed: &seed, TopK: 5, MinP: 0.1}, temp: 1.3, topP: 1, seed: 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := samplingParams(tt.in, func() uint64 { return 7 })
			if p.Temperature != tt.temp || p.TopP != tt.topP || p.Seed != tt.seed || p.TopK != tt.in.TopK || p.MinP != float32(tt.in.MinP) {
				t.Fatalf("params %+v", p)
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRepeatWindow: the request's window reaches the sampler, and an empty
// one turns every penalty off.
func TestRepeatWindow(t *testing.T) {
	n := func(v int) *int { return &v }
	pen := request.Sampling{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25}
	tests := []struct {
		name   string
		window *int
		want   sample.Params // only the penalty fields are compared
	}{
		{"default", nil, sample.Params{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25, RepeatLastN: 64}},
		{"window", n(8), sample.Params{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25, RepeatLastN: 8}},
		{"whole answer", n(-1), sample.Params{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25, RepeatLastN: -1}},
		{"off", n(0), sample.Params{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := pen
			in.RepeatLastN = tt.window
			p := samplingParams(in, func() uint64 { return 7 })
			got := sample.Params{RepeatPenalty: p.RepeatPenalty, PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty, RepeatLastN: p.RepeatLastN}
			if got != tt.want {
				t.Fatalf("penalties %+v, want %+v", got, tt.want)
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
