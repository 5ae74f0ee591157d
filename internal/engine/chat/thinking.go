package chat

import "strings"

// OpensThinking reports whether a rendered prompt ends inside an open
// <think> block (QwQ and DeepSeek-R1 open one in the generation prompt), so
// that the model's output begins as reasoning, before any </think>.
func OpensThinking(rendered string) bool {
	open := strings.LastIndex(rendered, "<think>")
	return open >= 0 && !strings.Contains(rendered[open:], "</think>")
}
