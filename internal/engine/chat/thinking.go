package chat

import "strings"

// OpensThinking reports whether a rendered prompt ends inside an open
// <think> block (QwQ and DeepSeek-R1 open one in the generation prompt), or
// an open [THINK] block (Mistral's reasoning models' tags), so that the
// model's output begins as reasoning, before any closing tag.
func OpensThinking(rendered string) bool {
	for _, tg := range [][2]string{{"<think>", "</think>"}, {"[THINK]", "[/THINK]"}} {
		open := strings.LastIndex(rendered, tg[0])
		if open >= 0 && !strings.Contains(rendered[open:], tg[1]) {
			return true
		}
	}
	return false
}
