package output

// Kind says what an Event carries.
type Kind uint8

const (
	// Content is answer text for the client.
	Content Kind = iota + 1
	// Reasoning is text from a <think> block.
	Reasoning
	// Call is one complete tool call.
	Call
)

func (k Kind) String() string {
	switch k {
	case Content:
		return "content"
	case Reasoning:
		return "reasoning"
	case Call:
		return "call"
	}
	return "unknown"
}

// Event is one piece of parsed output: a text delta (Content, Reasoning) in
// Text, or a tool call (Call) in ToolCall.
type Event struct {
	Kind     Kind
	Text     string
	ToolCall ToolCall
}

// ToolCall is a call the model made to a tool the request offered.
type ToolCall struct {
	Index     int    // 0-based position among this generation's calls
	ID        string // from Config.NewID, or "call_<Index>"
	Name      string
	Arguments string // a compact JSON object
}

// Coalesce merges adjacent text events of the same kind and drops empty
// ones, returning a new slice; calls are kept as they are.
func Coalesce(events []Event) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind != Call && e.Text == "" {
			continue
		}
		if n := len(out); n > 0 && e.Kind != Call && out[n-1].Kind == e.Kind {
			out[n-1].Text += e.Text
			continue
		}
		out = append(out, e)
	}
	return out
}
