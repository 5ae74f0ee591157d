package chat

// FallbackSource is the template used when a GGUF carries none: plain
// ChatML, the format most instruction-tuned models without a template of
// their own were trained on or tolerate:
//
//	<|im_start|>ROLE\nCONTENT<|im_end|>\n ... <|im_start|>assistant\n
//
// A null or non-string content (a tool-calling turn) renders empty, rather
// than failing, since no model-specific tool format is known.
const FallbackSource = `{%- for message in messages %}
{{- '<|im_start|>' + message.role + '\n' }}
{%- if message.content is string %}{{ message.content }}{% endif %}
{{- '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\n' }}
{%- endif %}`

// Fallback returns the compiled FallbackSource.
func Fallback() *Template {
	t, err := Parse(FallbackSource)
	if err != nil {
		panic("chat: FallbackSource does not compile: " + err.Error()) // a constant; TestFallback covers it
	}
	return t
}
