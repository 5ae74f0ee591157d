package prompt

import (
	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/serving/request"
)

// RequestParams maps a request's sampling settings to the engine loop's
// parameters, with request's defaults (DefaultTemperature, DefaultTopP, TokenCap); seed
// supplies the seed of a request that names none. `skulk generate` maps its
// flags through it too, so that it answers a request as a node does.
func RequestParams(s request.Sampling, seed func() uint64) engine.GenerateParams {
	return engine.GenerateParams{MaxTokens: s.TokenCap(), Sample: samplingParams(s, seed)}
}

// samplingParams maps a request's sampling settings to the sampler's;
// randomSeed supplies the seed when the request has none.
func samplingParams(s request.Sampling, randomSeed func() uint64) sample.Params {
	p := sample.Params{
		Temperature:      request.DefaultTemperature,
		TopP:             request.DefaultTopP,
		TopK:             s.TopK,
		MinP:             float32(s.MinP),
		RepeatPenalty:    float32(s.RepeatPenalty),
		PresencePenalty:  float32(s.PresencePenalty),
		FrequencyPenalty: float32(s.FrequencyPenalty),
	}
	switch n := s.RepeatLastN; {
	case n == nil:
		p.RepeatLastN = request.DefaultRepeatLastN
	case *n == 0:
		// An empty window penalises nothing.
		p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty = 0, 0, 0
	default:
		p.RepeatLastN = *n
	}
	if s.Temperature != nil {
		p.Temperature = float32(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = float32(*s.TopP)
	}
	if s.Seed != nil {
		p.Seed = *s.Seed
	} else {
		p.Seed = randomSeed()
	}
	return p
}
