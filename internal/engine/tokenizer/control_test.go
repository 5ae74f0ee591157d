package tokenizer

import "testing"

// TestControlTokens marks the control tokens with the asked texts and
// nothing else: a normal token with a marker's text stays unmarked (it
// decodes to its text anyway), and a vocabulary without any gives nil.
func TestControlTokens(t *testing.T) {
	v := tinyBPE("default")
	for _, s := range []string{"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<think>"} {
		v.Tokens = append(v.Tokens, s)
		v.Types = append(v.Types, TypeControl)
	}
	v.Tokens = append(v.Tokens, "</think>")
	v.Types = append(v.Types, TypeNormal)
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	marks := tok.ControlTokens([]string{"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "</think>", "<|im_end|>"})
	n := len(v.Tokens)
	if len(marks) != n {
		t.Fatalf("%d marks for %d tokens", len(marks), n)
	}
	for id, m := range marks {
		want := id == n-4 || id == n-3
		if m != want {
			t.Errorf("token %d (%q): marked %v, want %v", id, v.Tokens[id], m, want)
		}
		if m && tok.Piece(int32(id), false) != "" {
			t.Errorf("control token %q decodes to %q without specials", v.Tokens[id], tok.Piece(int32(id), false))
		}
	}
	if got := tok.ControlTokens([]string{"<|nothing|>"}); got != nil {
		t.Errorf("no such token: %v, want nil", got)
	}
}
