package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func ln(x float64) float32 { return float32(math.Log(x)) }

// randomLogits returns n logits from a fixed generator, rounded to a coarse
// grid so that ties occur and the tie rule is exercised.
func randomLogits(t testing.TB, seed uint64, n int) []float32 {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(math.Round(r.NormFloat64()*3*8) / 8)
	}
	return out
}

func TestValidate(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name  string
		p     Params
		field string // "" means valid
	}{
		{"zero value", Params{}, ""},
		{"typical", Params{Temperature: 0.8, TopP: 0.95, MinP: 0.05, TopK: 40, RepeatPenalty: 1.1, PresencePenalty: 0.5, FrequencyPenalty: -0.5, RepeatLastN: -1, Seed: 7}, ""},
		{"top_p one", Params{TopP: 1}, ""},
		{"negative temperature", Params{Temperature: -0.1}, "Temperature"},
		{"nan temperature", Params{Temperature: nan}, "Temperature"},
		{"infinite temperature", Params{Temperature: float32(math.Inf(1))}, "Temperature"},
		{"top_p above one", Params{TopP: 1.5}, "TopP"},
		{"negative top_p", Params{TopP: -0.1}, "TopP"},
		{"min_p above one", Params{MinP: 2}, "MinP"},
		{"negative top_k", Params{TopK: -1}, "TopK"},
		{"negative repeat penalty", Params{RepeatPenalty: -1}, "RepeatPenalty"},
		{"nan presence", Params{PresencePenalty: nan}, "PresencePenalty"},
		{"infinite frequency", Params{FrequencyPenalty: float32(math.Inf(-1))}, "FrequencyPenalty"},
		{"repeat_last_n below minus one", Params{RepeatLastN: -2}, "RepeatLastN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Field != tt.field || !errors.Is(err, ErrInvalidParams) {
				t.Fatalf("Validate() = %v, want a *ParamError for %s", err, tt.field)
			}
		})
	}
}

func TestGreedyFirstMaxWins(t *testing.T) {
	tests := []struct {
		name   string
		logits []float32
		want   int32
	}{
		{"single max", []float32{0, 3, 1}, 1},
		{"tie picks first", []float32{1, 5, 2, 5, 5}, 1},
		{"negative values", []float32{-3, -1, -2}, 1},
		{"nan skipped", []float32{float32(math.NaN()), 0.5, 0.25}, 1},
		{"all masked", []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, NoToken},
		{"empty", nil, NoToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Params{}, len(tt.logits))
			if got := s.Sample(tt.logits, nil); got != tt.want {
				t.Fatalf("Sample = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestSampleDoesNotModifyLogits(t *testing.T) {
	logits := randomLogits(t, 3, 1000)
	orig := slices.Clone(logits)
	s := New(Params{Temperature: 0.7, TopK: 50, TopP: 0.9, MinP: 0.02, RepeatPenalty: 1.3, PresencePenalty: 1, FrequencyPenalty: 1}, len(logits))
	s.SetConstraint(evenOnly{})
	for range 10 {
		s.Sample(logits, []int32{1, 2, 3, 4, 5, 6})
	}
	if !slices.Equal(logits, orig) {
		t.Fatal("Sample changed the caller's logits")
	}
}

func drawSequence(p Params, logits []float32, n int) []int32 {
	s := New(p, len(logits))
	out := make([]int32, n)
	for i := range out {
		out[i] = s.Sample(logits, out[:i])
	}
	return out
}

func TestSeedDeterminism(t *testing.T) {
	logits := randomLogits(t, 9, 200)
	p := Params{Temperature: 1.5, Seed: 42}
	a := drawSequence(p, logits, 200)
	b := drawSequence(p, logits, 200)
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different sequences")
	}
	p.Seed = 43
	c := drawSequence(p, logits, 200)
	if slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same 200-token sequence")
	}
}

// TestDistribution draws many tokens with a fixed seed and checks each
// token's frequency against its softmax probability within five standard
// deviations; the seed makes the test deterministic.
func TestDistribution(t *testing.T) {
	logits := []float32{1, 2, 0.5, -1, 3, 2}
	tests := []struct {
		name string
		p    Params
		keep []int // tokens that survive truncation; nil means all
	}{
		{"temperature 0.7", Params{Temperature: 0.7, Seed: 1}, nil},
		{"temperature 1.3", Params{Temperature: 1.3, Seed: 2}, nil},
		{"top_k 3", Params{Temperature: 1, TopK: 3, Seed: 3}, []int{4, 1, 5}},
		{"min_p 0.3", Params{Temperature: 1, MinP: 0.3, Seed: 4}, []int{4, 1, 5}},
	}
	const draws = 200000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep := tt.keep
			if keep == nil {
				for i := range logits {
					keep = append(keep, i)
				}
			}
			want := make([]float64, len(logits))
			var sum float64
			for _, id := range keep {
				want[id] = math.Exp(float64(logits[id]) / float64(tt.p.Temperature))
				sum += want[id]
			}
			s := New(tt.p, len(logits))
			got := make([]int, len(logits))
			for range draws {
				got[s.Sample(logits, nil)]++
			}
			for id := range logits {
				p := want[id] / sum
				mean := p * draws
				sd := math.Sqrt(draws * p * (1 - p))
				if math.Abs(float64(got[id])-mean) > 5*sd+0.5 {
					t.Errorf("token %d drawn %d times, want %.0f ± %.0f", id, got[id], mean, 5*sd)
				}
			}
		})
	}
}

func TestTopKOneEqualsGreedy(t *testing.T) {
	for seed := range uint64(50) {
		logits := randomLogits(t, seed, 300)
		greedy := New(Params{}, len(logits)).Sample(logits, nil)
		k1 := New(Params{Temperature: 2, TopK: 1, Seed: seed}, len(logits)).Sample(logits, nil)
		if greedy != k1 {
			t.Fatalf("seed %d: top-k 1 drew %d, greedy %d", seed, k1, greedy)
		}
	}
}

func ids(c []candidate) []int32 {
	out := make([]int32, len(c))
	for i, x := range c {
		out[i] = x.id
	}
	slices.Sort(out)
	return out
}

func cands(logits []float32) []candidate {
	c := make([]candidate, len(logits))
	for i, l := range logits {
		c[i] = candidate{int32(i), l}
	}
	return c
}

// Probabilities 0.05, 0.5, 0.15, 0.3 by construction.
var handLogits = []float32{ln(0.05), ln(0.5), ln(0.15), ln(0.3)}

func TestTopPCut(t *testing.T) {
	tests := []struct {
		p    float64
		want []int32
	}{
		{0.45, []int32{1}},
		{0.75, []int32{1, 3}},
		{0.85, []int32{1, 2, 3}},
		{0.99, []int32{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		got, _ := topP(cands(handLogits), 0, tt.p)
		if !slices.Equal(ids(got), tt.want) {
			t.Errorf("top_p %.2f kept %v, want %v", tt.p, ids(got), tt.want)
		}
	}
}

func TestMinPCut(t *testing.T) {
	tests := []struct {
		m    float32
		want []int32
	}{
		{0.05, []int32{0, 1, 2, 3}},
		{0.2, []int32{1, 2, 3}}, // threshold 0.10
		{0.5, []int32{1, 3}},    // threshold 0.25
		{0.7, []int32{1}},       // threshold 0.35
		{1, []int32{1}},         // only the best
		{3, []int32{1}},         // clamped: never empty
	}
	for _, tt := range tests {
		got := minP(cands(handLogits), 0, tt.m)
		if !slices.Equal(ids(got), tt.want) {
			t.Errorf("min_p %.2f kept %v, want %v", tt.m, ids(got), tt.want)
		}
	}
}

// TestTopPMatchesFullSort compares the incremental top-p against a full sort
// on large random vocabularies with ties.
func TestTopPMatchesFullSort(t *testing.T) {
	for seed := range uint64(20) {
		logits := randomLogits(t, seed, 5000)
		for _, p := range []float64{0.1, 0.5, 0.9, 0.999} {
			full := cands(logits)
			slices.SortFunc(full, cmpCandidates)
			var sum, acc float64
			for _, c := range full {
				sum += math.Exp(float64(c.logit - full[0].logit))
			}
			n := len(full)
			for i, c := range full {
				acc += math.Exp(float64(c.logit - full[0].logit))
				if acc >= p*sum {
					n = i + 1
					break
				}
			}
			got, sorted := topP(cands(logits), 0, p)
			if sorted != len(got) || !slices.Equal(got, full[:n]) {
				t.Fatalf("seed %d p %.3f: top-p kept %d tokens, want %d (or order differs)", seed, p, len(got), n)
			}
		}
	}
}

func TestTopNMatchesFullSort(t *testing.T) {
	for seed := range uint64(20) {
		logits := randomLogits(t, seed, 3000)
		full := cands(logits)
		slices.SortFunc(full, cmpCandidates)
		for _, k := range []int{1, 2, 40, 999, 2999, 3000, 5000} {
			c := cands(logits)
			topN(c, 0, k)
			k := min(k, len(c))
			if !slices.Equal(c[:k], full[:k]) {
				t.Fatalf("seed %d k %d: top-k differs from a full sort", seed, k)
			}
		}
	}
}

func TestPenalties(t *testing.T) {
	logits := []float32{2, -1, 0.5, 3, 0}
	tests := []struct {
		name    string
		p       Params
		history []int32
		want    []float32
	}{
		{
			// id0: 2/2 - (2*0.1+0.5); id1: -1*2 - 0.6; id3: 3/2 - (3*0.1+0.5); id4: 0*2 - 0.6.
			name:    "all three over whole history",
			p:       Params{RepeatPenalty: 2, FrequencyPenalty: 0.1, PresencePenalty: 0.5, RepeatLastN: -1},
			history: []int32{0, 0, 1, 3, 3, 3, 4},
			want:    []float32{0.3, -2.6, 0.5, 0.7, -0.6},
		},
		{
			name:    "window of two",
			p:       Params{RepeatPenalty: 2, FrequencyPenalty: 0.1, RepeatLastN: 2},
			history: []int32{0, 1, 3, 3},
			want:    []float32{2, -1, 0.5, 1.3, 0},
		},
		{
			name:    "default window is 64",
			p:       Params{PresencePenalty: 1},
			history: append([]int32{2}, make([]int32, 64)...),
			want:    []float32{1, -1, 0.5, 3, 0},
		},
		{
			name:    "repeat penalty one is off",
			p:       Params{RepeatPenalty: 1, RepeatLastN: -1},
			history: []int32{0, 1},
			want:    []float32{2, -1, 0.5, 3, 0},
		},
		{
			name:    "out of range history ignored",
			p:       Params{PresencePenalty: 1, RepeatLastN: -1},
			history: []int32{-5, 99, 2},
			want:    []float32{2, -1, -0.5, 3, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(tt.p, len(logits))
			work := slices.Clone(logits)
			s.penalize(work, tt.history)
			for i := range work {
				if math.Abs(float64(work[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("penalised logits = %v, want %v", work, tt.want)
				}
			}
			for i, c := range s.counts {
				if c != 0 {
					t.Fatalf("counts[%d] = %d after penalize, want 0", i, c)
				}
			}
		})
	}
}

func TestPenaltyChangesGreedyPick(t *testing.T) {
	logits := []float32{2, 1.9}
	s := New(Params{RepeatPenalty: 1.1}, 2)
	if got := s.Sample(logits, []int32{0}); got != 1 {
		t.Fatalf("greedy with token 0 penalised picked %d, want 1", got)
	}
	if got := s.Sample(logits, nil); got != 0 {
		t.Fatalf("greedy without history picked %d, want 0", got)
	}
}

type evenOnly struct{}

func (evenOnly) Mask(l []float32) {
	for i := 1; i < len(l); i += 2 {
		l[i] = float32(math.Inf(-1))
	}
}

type denyAll struct{}

func (denyAll) Mask(l []float32) {
	for i := range l {
		l[i] = float32(math.Inf(-1))
	}
}

func TestConstraint(t *testing.T) {
	logits := []float32{1, 9, 3, 8, 2}
	greedy := New(Params{}, 5)
	greedy.SetConstraint(evenOnly{})
	if got := greedy.Sample(logits, nil); got != 2 {
		t.Fatalf("greedy under even-only mask = %d, want 2", got)
	}
	s := New(Params{Temperature: 5, Seed: 1}, 5)
	s.SetConstraint(evenOnly{})
	for range 1000 {
		if got := s.Sample(logits, nil); got%2 != 0 {
			t.Fatalf("drew masked token %d", got)
		}
	}
	s.SetConstraint(denyAll{})
	if got := s.Sample(logits, nil); got != NoToken {
		t.Fatalf("everything masked: Sample = %d, want NoToken", got)
	}
}

func TestOutOfRangeParamsDoNotPanic(t *testing.T) {
	logits := randomLogits(t, 5, 100)
	nan := float32(math.NaN())
	for _, p := range []Params{
		{Temperature: nan},
		{Temperature: float32(math.Inf(1))},
		{Temperature: 1e-30},
		{Temperature: 1, TopK: -3, TopP: 7, MinP: 9},
		{Temperature: 1, TopK: 1 << 30},
		{Temperature: 1, RepeatPenalty: nan, PresencePenalty: nan, RepeatLastN: -7},
	} {
		s := New(p, 0)
		got := s.Sample(logits, []int32{1, 2, 3})
		if got != NoToken && (got < 0 || int(got) >= len(logits)) {
			t.Fatalf("%+v: Sample = %d, out of range", p, got)
		}
	}
}

func TestAllocsPerToken(t *testing.T) {
	const vocab = 32000
	logits := randomLogits(t, 11, vocab)
	history := make([]int32, 200)
	for i := range history {
		history[i] = int32(i * 37 % vocab)
	}
	for _, p := range []Params{
		{},
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, PresencePenalty: 0.2, FrequencyPenalty: 0.2},
		{Temperature: 0.8, TopP: 0.9},
		{Temperature: 1},
	} {
		s := New(p, vocab)
		s.SetConstraint(evenOnly{})
		s.Sample(logits, history)
		if n := testing.AllocsPerRun(20, func() { s.Sample(logits, history) }); n != 0 {
			t.Errorf("%+v: %v allocations per Sample, want 0", p, n)
		}
	}
	dst := make([]Logprob, 0, 20)
	if n := testing.AllocsPerRun(20, func() { dst = TopLogprobs(logits, 20, dst[:0]) }); n != 0 {
		t.Errorf("TopLogprobs: %v allocations per call, want 0", n)
	}
}
