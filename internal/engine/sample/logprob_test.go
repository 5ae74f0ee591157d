package sample

import (
	"math"
	"slices"
	"testing"
)

func TestTopLogprobsHandComputed(t *testing.T) {
	// Probabilities 0.2, 0.4, 0.4: the tie goes to the lower id.
	logits := []float32{0, ln(2), ln(2)}
	got := TopLogprobs(logits, 2, nil)
	want := []Logprob{{1, ln(0.4)}, {2, ln(0.4)}}
	if len(got) != len(want) {
		t.Fatalf("TopLogprobs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || math.Abs(float64(got[i].Logprob-want[i].Logprob)) > 1e-6 {
			t.Fatalf("TopLogprobs = %v, want %v", got, want)
		}
	}
	if lp := LogprobOf(logits, 0); math.Abs(float64(lp)-math.Log(0.2)) > 1e-6 {
		t.Fatalf("LogprobOf(0) = %v, want ln 0.2", lp)
	}
}

func TestTopLogprobsAppendsAndBounds(t *testing.T) {
	logits := []float32{1, 2, 3}
	prefix := []Logprob{{ID: 99}}
	got := TopLogprobs(logits, 10, prefix)
	if len(got) != 4 || got[0].ID != 99 || got[1].ID != 2 || got[3].ID != 0 {
		t.Fatalf("TopLogprobs appended %v", got)
	}
	if got := TopLogprobs(logits, 0, nil); len(got) != 0 {
		t.Fatalf("n=0 gave %v", got)
	}
	if got := TopLogprobs([]float32{float32(math.NaN())}, 3, nil); len(got) != 0 {
		t.Fatalf("all-NaN logits gave %v", got)
	}
	if lp := LogprobOf(logits, 3); !math.IsInf(float64(lp), -1) {
		t.Fatalf("LogprobOf out of range = %v, want -Inf", lp)
	}
	if lp := LogprobOf(logits, -1); !math.IsInf(float64(lp), -1) {
		t.Fatalf("LogprobOf(-1) = %v, want -Inf", lp)
	}
}

// TestLogprobsSumToOne checks that the full distribution exp-sums to 1 and
// that both TopLogprobs strategies (insertion and full sort) agree.
func TestLogprobsSumToOne(t *testing.T) {
	for seed := range uint64(5) {
		logits := randomLogits(t, seed, 50000)
		all := TopLogprobs(logits, len(logits), nil)
		if len(all) != len(logits) {
			t.Fatalf("got %d logprobs, want %d", len(all), len(logits))
		}
		var sum float64
		for i, lp := range all {
			sum += math.Exp(float64(lp.Logprob))
			if i > 0 && (lp.Logprob > all[i-1].Logprob || lp.Logprob == all[i-1].Logprob && lp.ID < all[i-1].ID) {
				t.Fatalf("logprobs out of order at %d: %v then %v", i, all[i-1], lp)
			}
			if i%997 != 0 {
				continue // LogprobOf is O(vocab); spot-check it
			}
			if d := math.Abs(float64(lp.Logprob - LogprobOf(logits, lp.ID))); d > 1e-6 {
				t.Fatalf("TopLogprobs and LogprobOf disagree on %d by %g", lp.ID, d)
			}
		}
		if math.Abs(sum-1) > 1e-4 {
			t.Fatalf("exp-sum of logprobs = %v, want 1", sum)
		}
		small := TopLogprobs(logits, insertLimit, nil)
		if !slices.Equal(small, all[:insertLimit]) {
			t.Fatalf("insertion top-%d differs from the sorted prefix", insertLimit)
		}
	}
}
