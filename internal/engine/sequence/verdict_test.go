package sequence

import "testing"

func TestBudget(t *testing.T) {
	tests := []struct {
		name                       string
		prompt, maxTokens, context int
		want                       int
		wantErr                    bool
	}{
		{"window_left", 10, 0, 64, 54, false},
		{"capped", 10, 5, 64, 5, false},
		{"cap_past_window", 10, 100, 64, 54, false},
		{"one_left", 63, 0, 64, 1, false},
		{"prompt_fills", 64, 0, 64, 0, true},
		{"negative_cap", 10, -1, 64, 0, true},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			got, err := Budget(c.prompt, c.maxTokens, c.context)
			if (err != nil) != c.wantErr || got != c.want {
				t.Fatalf("Budget(%d, %d, %d) = %d, %v; want %d, error %v", c.prompt, c.maxTokens, c.context, got, err, c.want, c.wantErr)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name              string
		eog               bool
		generated, budget int
		want              Verdict
	}{
		{"continue", false, 0, 64, Continue},
		{"second_to_last", false, 62, 64, Continue},
		{"last_of_budget", false, 63, 64, Last},
		{"budget_of_one", false, 0, 1, Last},
		{"eog_first", true, 0, 64, EndOfGeneration},
		{"eog_at_the_last", true, 63, 64, EndOfGeneration},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			if got := Judge(c.eog, c.generated, c.budget); got != c.want {
				t.Fatalf("Judge(%v, %d, %d) = %d, want %d", c.eog, c.generated, c.budget, got, c.want)
			}
		})
	}
}
