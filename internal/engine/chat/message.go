package chat

// Message is a typed chat message, for callers that build conversations in
// Go rather than pass client JSON through. Object gives the shape the
// OpenAI API and transformers use; empty optional fields are left out, as
// a client would leave them out.
type Message struct {
	Role    string
	Content string
	// NullContent sends content as null (an assistant turn that only calls tools).
	NullContent      bool
	ReasoningContent string
	// Thinking is the reasoning under the name gpt-oss's harmony template
	// reads (message.thinking); callers set it for that family only.
	Thinking   string
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
}

// ToolCall is one call in an assistant message.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the decoded JSON object (an Object, or a map, whose keys
	// are then sorted), or a string when the client sent the raw JSON text.
	Arguments any
}

// Object returns m in the key order of an OpenAI chat message: role,
// content, reasoning_content, thinking, tool_calls, tool_call_id, name.
func (m Message) Object() Object {
	o := Object{{Key: "role", Value: m.Role}}
	if m.NullContent {
		o = append(o, Field{Key: "content", Value: nil})
	} else {
		o = append(o, Field{Key: "content", Value: m.Content})
	}
	if m.ReasoningContent != "" {
		o = append(o, Field{Key: "reasoning_content", Value: m.ReasoningContent})
	}
	if m.Thinking != "" {
		o = append(o, Field{Key: "thinking", Value: m.Thinking})
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			call := Object{}
			if tc.ID != "" {
				call = append(call, Field{Key: "id", Value: tc.ID})
			}
			call = append(call,
				Field{Key: "type", Value: "function"},
				Field{Key: "function", Value: Object{{Key: "name", Value: tc.Name}, {Key: "arguments", Value: tc.Arguments}}})
			calls[i] = call
		}
		o = append(o, Field{Key: "tool_calls", Value: calls})
	}
	if m.ToolCallID != "" {
		o = append(o, Field{Key: "tool_call_id", Value: m.ToolCallID})
	}
	if m.Name != "" {
		o = append(o, Field{Key: "name", Value: m.Name})
	}
	return o
}

// Objects converts messages with Message.Object.
func Objects(ms []Message) []Object {
	out := make([]Object, len(ms))
	for i, m := range ms {
		out[i] = m.Object()
	}
	return out
}
