package output

import (
	"errors"
	"fmt"
)

// Dialect is how a model family writes tool calls in its output.
type Dialect uint8

const (
	// NoDialect parses no calls; marker text is still scrubbed.
	NoDialect Dialect = iota
	// Hermes is <tool_call>{"name":..., "arguments":{...}}</tool_call>
	// (Hermes, Qwen2.5, Qwen3). A Qwen3-Coder XML body is accepted too, and
	// GLM-4.5/4.6's NAME<arg_key>K</arg_key><arg_value>V</arg_value>.
	Hermes
	// QwenXML is Qwen3-Coder's <tool_call><function=NAME><parameter=P>
	// value</parameter></function></tool_call>. A Hermes JSON body is
	// accepted too, since both families share the markers.
	QwenXML
	// Llama3 is a bare {"name":..., "parameters":{...}} object at the start
	// of the answer, or anywhere after <|python_tag|>.
	Llama3
	// Mistral is [TOOL_CALLS][{"name":..., "arguments":{...}}, ...] or the
	// newer [TOOL_CALLS]NAME[ARGS]{...} (with an optional [CALL_ID]id).
	Mistral
	// Harmony is gpt-oss's channels: analysis is reasoning, final (and a
	// commentary preamble) is content, and a message to=functions.NAME
	// is a call of NAME (see harmony.go).
	Harmony
	// DeepSeek is <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME
	// <｜tool▁sep｜>{...}<｜tool▁call▁end｜>...<｜tool▁calls▁end｜> (V3.1;
	// R1's "function<｜tool▁sep｜>NAME ```json fence" too).
	DeepSeek
	// Kimi is Kimi K2's <|tool_calls_section_begin|><|tool_call_begin|>
	// functions.NAME:0<|tool_call_argument_begin|>{...}<|tool_call_end|>
	// ...<|tool_calls_section_end|>.
	Kimi
)

var dialectNames = [...]string{
	NoDialect: "none",
	Hermes:    "hermes",
	QwenXML:   "qwen3_coder",
	Llama3:    "llama3",
	Mistral:   "mistral",
	Harmony:   "harmony",
	DeepSeek:  "deepseek",
	Kimi:      "kimi",
}

func (d Dialect) String() string {
	if int(d) < len(dialectNames) {
		return dialectNames[d]
	}
	return fmt.Sprintf("Dialect(%d)", uint8(d))
}

// ErrUnknownDialect is returned (wrapped) by ParseDialect.
var ErrUnknownDialect = errors.New("output: unknown tool-call dialect")

// ParseDialect maps a dialect name (as String returns it) to its Dialect.
func ParseDialect(name string) (Dialect, error) {
	for d, n := range dialectNames {
		if n == name {
			return Dialect(d), nil
		}
	}
	return 0, fmt.Errorf("%w %q; use one of none, hermes, qwen3_coder, llama3, mistral, harmony, deepseek, kimi", ErrUnknownDialect, name)
}

// The control markers of every dialect. They are removed from content
// wherever they appear, so markup never reaches a client.
const (
	tagToolCall      = "<tool_call>"
	tagToolCallClose = "</tool_call>"
	tagPythonTag     = "<|python_tag|>"
	tagEOM           = "<|eom_id|>"
	tagToolCalls     = "[TOOL_CALLS]"
	tagArgs          = "[ARGS]"
	tagCallID        = "[CALL_ID]"
)

var markerVocabulary = append([]string{tagToolCall, tagToolCallClose, tagPythonTag, tagEOM, tagToolCalls, tagArgs, tagCallID},
	append(deepSeekSection.all(), kimiSection.all()...)...)

// Markers are the texts d's parser reads in a generation: its call markers
// and the reasoning tags. A vocabulary may type them as control tokens,
// which decode to nothing; the runner renders those tokens as their text
// (llama-server's preserved tokens) so that the parser sees them.
func (d Dialect) Markers() []string {
	ms := []string{tagThink, tagThinkClose}
	switch d {
	case Hermes, QwenXML:
		ms = append(ms, tagToolCall, tagToolCallClose)
	case Llama3:
		ms = append(ms, tagPythonTag)
	case Mistral:
		ms = append(ms, tagToolCalls, tagArgs, tagCallID, tagMistralThink, tagMistralThinkClose)
	case Harmony:
		ms = append(ms, harmonyMarkers...)
	}
	if m, ok := d.section(); ok {
		ms = append(ms, m.all()...)
	}
	return ms
}

// opener returns the marker that opens a call block in d, if any.
func (d Dialect) opener() string {
	switch d {
	case Hermes, QwenXML:
		return tagToolCall
	case Llama3:
		return tagPythonTag
	case Mistral:
		return tagToolCalls
	}
	if m, ok := d.section(); ok {
		return m.begin
	}
	return ""
}
