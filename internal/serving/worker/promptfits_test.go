package worker

import (
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

func TestCheckPromptFits(t *testing.T) {
	st := proto.Status{ContextTokens: 100, BytesPerToken: 10} // at most 1,000 bytes of text
	msgs := func(last string) []request.Message {
		return []request.Message{{Role: request.RoleSystem, Content: strings.Repeat("s", 5000)}, {Role: request.RoleUser, Content: last}}
	}
	for _, tc := range []struct {
		name   string
		req    request.Request
		st     proto.Status
		refuse bool
	}{
		{"short prompt", request.Request{Prompt: "hello"}, st, false},
		{"prompt just under", request.Request{Prompt: strings.Repeat("x", 990)}, st, false},
		{"prompt at the window", request.Request{Prompt: strings.Repeat("x", 991)}, st, true},
		{"huge prompt", request.Request{Prompt: strings.Repeat("x", 4<<20)}, st, true},
		{"huge last message", request.Request{Messages: msgs(strings.Repeat("x", 4<<20))}, st, true},
		// Only the last message is a sure lower bound: a template may
		// leave earlier turns out.
		{"huge earlier message", request.Request{Messages: msgs("hi")}, st, false},
		{"no bound known", request.Request{Prompt: strings.Repeat("x", 4<<20)}, proto.Status{ContextTokens: 100}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkPromptFits(tc.req, tc.st)
			if (err != nil) != tc.refuse {
				t.Fatalf("err %v, refuse %v", err, tc.refuse)
			}
			if err != nil && (fault.ClassOf(err) != fault.ClassInvalid || !strings.Contains(err.Error(), "context window is 100 tokens")) {
				t.Fatalf("refusal %v", err)
			}
		})
	}
}
