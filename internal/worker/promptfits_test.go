package worker

import (
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/infer"
	"github.com/skulk/skulk/internal/runner"
)

func TestCheckPromptFits(t *testing.T) {
	st := runner.Status{ContextTokens: 100, BytesPerToken: 10} // at most 1,000 bytes of text
	msgs := func(last string) []infer.Message {
		return []infer.Message{{Role: infer.RoleSystem, Content: strings.Repeat("s", 5000)}, {Role: infer.RoleUser, Content: last}}
	}
	for _, tc := range []struct {
		name   string
		req    infer.Request
		st     runner.Status
		refuse bool
	}{
		{"short prompt", infer.Request{Prompt: "hello"}, st, false},
		{"prompt just under", infer.Request{Prompt: strings.Repeat("x", 990)}, st, false},
		{"prompt at the window", infer.Request{Prompt: strings.Repeat("x", 991)}, st, true},
		{"huge prompt", infer.Request{Prompt: strings.Repeat("x", 4<<20)}, st, true},
		{"huge last message", infer.Request{Messages: msgs(strings.Repeat("x", 4<<20))}, st, true},
		// Only the last message is a sure lower bound: a template may
		// leave earlier turns out.
		{"huge earlier message", infer.Request{Messages: msgs("hi")}, st, false},
		{"no bound known", infer.Request{Prompt: strings.Repeat("x", 4<<20)}, runner.Status{ContextTokens: 100}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPromptFits(tc.req, tc.st)
			if (err != nil) != tc.refuse {
				t.Fatalf("err %v, refuse %v", err, tc.refuse)
			}
			if err != nil && (infer.ClassOf(err) != infer.ClassInvalid || !strings.Contains(err.Error(), "context window is 100 tokens")) {
				t.Fatalf("refusal %v", err)
			}
		})
	}
}
