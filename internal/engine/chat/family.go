package chat

import "strings"

// Family names the tool-call dialect a template teaches its model, so the
// server knows how to find tool calls in the output.
type Family string

const (
	FamilyHermes     Family = "hermes"      // <tool_call>{json}</tool_call>: Hermes, Qwen2.5, Qwen3, QwQ; GLM-4.5/4.6
	FamilyQwen3Coder Family = "qwen3-coder" // <tool_call><function=name><parameter=...>
	FamilyLlama3     Family = "llama3"      // bare JSON {"name", "parameters"}, <|python_tag|>
	FamilyMistral    Family = "mistral"     // [TOOL_CALLS][{...}]
	FamilyDeepSeek   Family = "deepseek"    // <｜tool▁calls▁begin｜> ... <｜tool▁sep｜>
	FamilyKimi       Family = "kimi"        // <|tool_calls_section_begin|> ... functions.NAME:0
	FamilyHarmony    Family = "harmony"     // gpt-oss: <|channel|>analysis / final / commentary to=functions.NAME
	FamilyOther      Family = "other"       // no tool dialect recognised
)

// familyMarkers are checked in order; the first family whose markers occur
// in the template wins. Qwen3-Coder also prints <tool_call>, so it comes
// before Hermes.
var familyMarkers = []struct {
	family  Family
	markers []string
}{
	{FamilyHarmony, []string{"<|channel|>"}},
	{FamilyQwen3Coder, []string{"<function=", "<parameter="}},
	{FamilyDeepSeek, []string{"tool▁calls▁begin", "<｜Assistant｜>"}},
	{FamilyKimi, []string{"<|tool_calls_section_begin|>"}},
	{FamilyMistral, []string{"[TOOL_CALLS]", "[INST]"}},
	{FamilyHermes, []string{"<tool_call>"}},
	{FamilyLlama3, []string{"<|start_header_id|>"}},
}

// DetectFamily tells the tool-call dialect from a template's source.
func DetectFamily(source string) Family {
	for _, fm := range familyMarkers {
		for _, m := range fm.markers {
			if strings.Contains(source, m) {
				return fm.family
			}
		}
	}
	return FamilyOther
}

// Family is DetectFamily of the template's source.
func (t *Template) Family() Family { return DetectFamily(t.source) }
