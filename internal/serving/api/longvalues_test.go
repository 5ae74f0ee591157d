package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/fault"
)

// messageOf returns the message of an error document of any wire format:
// OpenAI's and Anthropic's {"error":{"message"}}, Ollama's {"error":"..."}.
func messageOf(t *testing.T, body []byte) string {
	t.Helper()
	var doc struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Error == nil {
		t.Fatalf("%.300s is not an error document: %v", body, err)
	}
	var msg string
	if json.Unmarshal(doc.Error, &msg) == nil {
		return msg
	}
	var obj struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(doc.Error, &obj); err != nil {
		t.Fatalf("%.300s is not an error document: %v", body, err)
	}
	return obj.Message
}

// TestLongValuesAreQuotedShort: whatever a client sends, an error message
// repeats at most fault.MaxQuoted bytes of it and stays under
// fault.MaxMessage, in every wire format.
func TestLongValuesAreQuotedShort(t *testing.T) {
	f := newFixture(t, Config{MaxBodyBytes: 8 << 20})
	long := strings.Repeat("x", 1<<20)
	longPath := strings.Repeat("p", 512<<10) // a 1 MB request line would hit the header limit first
	chat := func(field, value string) string {
		req := map[string]any{"model": "echo", "messages": []map[string]any{{"role": "user", "content": "hi"}}}
		req[field] = value
		b, _ := json.Marshal(req)
		return string(b)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
	}{
		{"openai_route", "GET", "/v1/" + longPath, "", http.StatusNotFound},
		{"openai_method", strings.Repeat("M", 512<<10), "/v1/chat/completions", "", http.StatusMethodNotAllowed},
		{"ollama_method", strings.Repeat("M", 512<<10), "/api/chat", "", http.StatusMethodNotAllowed},
		{"anthropic_route", "GET", "/v1/messages/" + longPath, "", http.StatusNotFound},
		{"ollama_route", "GET", "/api/" + longPath, "", http.StatusNotFound},
		{"openai_model", "POST", "/v1/chat/completions", chat("model", long), http.StatusNotFound},
		{"anthropic_model", "POST", "/v1/messages", `{"max_tokens":8,"messages":[{"role":"user","content":"hi"}],"model":"` + long + `"}`, http.StatusNotFound},
		{"ollama_model", "POST", "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"model":"` + long + `"}`, http.StatusNotFound},
		{"openai_role", "POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"` + long + `","content":"hi"}]}`, http.StatusBadRequest},
		{"anthropic_role", "POST", "/v1/messages", `{"model":"echo","max_tokens":8,"messages":[{"role":"` + long + `","content":"hi"}]}`, http.StatusBadRequest},
		{"ollama_role", "POST", "/api/chat", `{"model":"echo","messages":[{"role":"` + long + `","content":"hi"}]}`, http.StatusBadRequest},
		{"openai_number", "POST", "/v1/chat/completions", `{"model":"echo","max_tokens":` + strings.Repeat("9", 1<<20) + `,"messages":[]}`, http.StatusBadRequest},
		{"openai_tool_choice", "POST", "/v1/chat/completions", chat("tool_choice", long), http.StatusBadRequest},
		{"control_unknown_field", "POST", "/place_instance", `{"` + long + `":1}`, http.StatusBadRequest},
		{"responses_previous", "POST", "/v1/responses", `{"model":"echo","input":"hi","previous_response_id":"` + long + `"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(t, tt.method, tt.path, tt.body)
			msg := messageOf(t, r.body)
			if r.status != tt.status || len(msg) > fault.MaxMessage || len(r.body) > 2*fault.MaxMessage {
				t.Fatalf("%d with a %d-byte message (%d-byte body), want %d with at most %d: %.300s",
					r.status, len(msg), len(r.body), tt.status, fault.MaxMessage, msg)
			}
			if !strings.Contains(msg, " bytes)") {
				t.Errorf("the message does not say the value was cut: %.300s", msg)
			}
		})
	}
}
