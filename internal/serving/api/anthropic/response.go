package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/skulk/skulk/internal/serving/request"
)

// Meta identifies one answer: its id ("msg_" and a unique part, which also
// makes the ids of its tool_use blocks unique) and the model name echoed to
// the client. The caller mints the id.
type Meta struct {
	ID    string
	Model string
}

// toolID is the id of the answer's n-th tool_use block. The runner's own
// call ids are unique only within one answer; these are unique across a
// conversation, as Anthropic's clients expect.
func (m Meta) toolID(n int) string {
	return "toolu_" + strings.TrimPrefix(m.ID, "msg_") + "_" + strconv.Itoa(n)
}

// Stop reasons.
const (
	StopEndTurn   = "end_turn"
	StopMaxTokens = "max_tokens"
	StopSequence  = "stop_sequence"
	StopToolUse   = "tool_use"
)

// Content block and delta types.
const (
	BlockText      = "text"
	BlockThinking  = "thinking"
	BlockToolUse   = "tool_use"
	DeltaText      = "text_delta"
	DeltaThinking  = "thinking_delta"
	DeltaInputJSON = "input_json_delta"
)

const (
	typeMessage      = "message"
	roleAssistant    = "assistant"
	emptyInputObject = "{}"
)

// stopReason maps a done chunk's finish reason to Anthropic's stop_reason
// and stop_sequence. A task that made tool calls ends with tool_use; a stop
// sequence that ended the answer is stop_sequence and is named; any other
// "stop" is end_turn.
func stopReason(c request.Chunk, toolCalls int) (string, *string) {
	switch {
	case c.FinishReason == request.FinishLength:
		return StopMaxTokens, nil
	case c.FinishReason == request.FinishToolCalls, toolCalls > 0:
		return StopToolUse, nil
	case c.StopSequence != "":
		seq := c.StopSequence
		return StopSequence, &seq
	}
	return StopEndTurn, nil
}

// Usage counts the tokens of one answer.
// As Anthropic counts them, input_tokens excludes the prompt tokens read
// from the cache, which cache_read_input_tokens counts (present when any
// were).
type Usage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens,omitempty"`
}

func usageFrom(u *request.Usage) Usage {
	if u == nil {
		return Usage{}
	}
	return Usage{InputTokens: u.PromptTokens - u.CachedTokens, OutputTokens: u.CompletionTokens, CacheReadInputTokens: u.CachedTokens}
}

// timingsFrom is the extension field "timings" (llama-server's): the
// runner's prompt and decode counts and times, when it measured them.
func timingsFrom(u *request.Usage) *request.Timings {
	if u == nil {
		return nil
	}
	return u.Timings
}

// ContentBlock is one block of an answer: text, thinking or tool_use.
// Marshalled, it carries only its type's fields.
type ContentBlock struct {
	Type string
	// Text is the text of a text block and the reasoning of a thinking
	// block.
	Text string
	// ID, Name and Input (a JSON object as text) belong to tool_use.
	ID, Name, Input string
}

// MarshalJSON writes the block in Anthropic's shape for its type.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case BlockThinking:
		// Skulk's reasoning is not signed; the field is there because
		// clients expect it on every thinking block.
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"signature"`
		}{b.Type, b.Text, ""})
	case BlockToolUse:
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, json.RawMessage(b.Input)})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{b.Type, b.Text})
}

// Message is a whole, non-streamed answer and, with empty content and no
// stop reason, the message of a stream's message_start event.
type Message struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []ContentBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        Usage          `json:"usage"`
	// Timings are llama-server's extension field: prompt and decode
	// counts and times.
	Timings *request.Timings `json:"timings,omitempty"`
}

// blocks tracks an answer's content blocks: consecutive text (or
// reasoning) extends the last block, a change of kind opens a new one, and
// every tool call is a block of its own. The stream keeps only the blocks'
// kinds; the accumulator also keeps their text, in builders, so a long
// answer is not copied once per chunk.
type blocks struct {
	meta      Meta
	list      []ContentBlock
	text      []*strings.Builder // index-aligned with list; nil where unused
	toolCalls int
}

// last returns the index of the last block, or -1.
func (bs *blocks) last() int { return len(bs.list) - 1 }

// open appends an empty block of type typ and returns its index.
func (bs *blocks) open(typ string) int {
	bs.list = append(bs.list, ContentBlock{Type: typ})
	bs.text = append(bs.text, nil)
	return bs.last()
}

// appendText adds text to the last block when it is of type typ, else to a
// new one.
func (bs *blocks) appendText(typ, text string) {
	i := bs.last()
	if i < 0 || bs.list[i].Type != typ {
		i = bs.open(typ)
		bs.text[i] = &strings.Builder{}
	}
	bs.text[i].WriteString(text)
}

// appendToolCall appends a tool_use block for tc and returns it.
func (bs *blocks) appendToolCall(tc *request.ToolCall) ContentBlock {
	i := bs.open(BlockToolUse)
	args := toolInput(tc.Arguments)
	bs.list[i] = ContentBlock{Type: BlockToolUse, ID: bs.meta.toolID(bs.toolCalls), Name: tc.Name, Input: args}
	bs.toolCalls++
	return bs.list[i]
}

// toolInput is a tool call's arguments as a tool_use block's input: the
// JSON object infer promises, {} for none, and, should a backend break that
// promise, the text as a JSON string rather than invalid JSON on the wire
// (a client sending it back is then told that input must be an object).
func toolInput(args string) string {
	t := strings.TrimSpace(args)
	switch {
	case t == "":
		return emptyInputObject
	case t[0] == '{' && json.Valid([]byte(t)):
		return t
	}
	b, _ := json.Marshal(args) // a string always marshals
	return string(b)
}

// Accumulator aggregates one task's chunks into a [Message].
type Accumulator struct {
	blocks
	done request.Chunk // the done chunk, once it has come
}

// NewAccumulator returns an accumulator for one answer.
func NewAccumulator(m Meta) *Accumulator { return &Accumulator{blocks: blocks{meta: m}} }

// Add folds c into the answer. Error chunks are the caller's to handle.
func (a *Accumulator) Add(c request.Chunk) {
	switch c.Kind {
	case request.ChunkDelta:
		if c.Reasoning != "" {
			a.appendText(BlockThinking, c.Reasoning)
		}
		if c.Content != "" {
			a.appendText(BlockText, c.Content)
		}
	case request.ChunkToolCall:
		if c.ToolCall != nil {
			a.appendToolCall(c.ToolCall)
		}
	case request.ChunkDone:
		a.done = c
	}
}

// Result returns the answer aggregated so far.
func (a *Accumulator) Result() Message {
	reason, seq := stopReason(a.done, a.toolCalls)
	content := make([]ContentBlock, len(a.list))
	for i, b := range a.list {
		if a.text[i] != nil {
			b.Text = a.text[i].String()
		}
		content[i] = b
	}
	return Message{
		ID: a.meta.ID, Type: typeMessage, Role: roleAssistant, Model: a.meta.Model,
		Content: content, StopReason: &reason, StopSequence: seq, Usage: usageFrom(a.done.Usage), Timings: timingsFrom(a.done.Usage),
	}
}

// Event is one server-sent event of a streamed answer: its name (the
// "event:" line, which is also the payload's type) and its payload.
type Event struct {
	Name string
	Data any
}

// Event names.
const (
	EventMessageStart      = "message_start"
	EventPing              = "ping"
	EventContentBlockStart = "content_block_start"
	EventContentBlockDelta = "content_block_delta"
	EventContentBlockStop  = "content_block_stop"
	EventMessageDelta      = "message_delta"
	EventMessageStop       = "message_stop"
	EventError             = "error"
)

// MessageStart is the payload of message_start.
type MessageStart struct {
	Type    string  `json:"type"`
	Message Message `json:"message"`
}

// Ping is the payload of ping.
type Ping struct {
	Type string `json:"type"`
}

// ContentBlockStart is the payload of content_block_start. The block is
// empty: a text block with "", a tool_use block with input {}.
type ContentBlockStart struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	ContentBlock ContentBlock `json:"content_block"`
}

// ContentBlockDelta is the payload of content_block_delta.
type ContentBlockDelta struct {
	Type  string     `json:"type"`
	Index int        `json:"index"`
	Delta BlockDelta `json:"delta"`
}

// BlockDelta is what one content_block_delta adds to its block: text
// (text_delta), thinking (thinking_delta) or partial_json
// (input_json_delta). Marshalled, it carries only its type's field.
type BlockDelta struct {
	Type string
	Text string
}

// MarshalJSON writes the delta in Anthropic's shape for its type.
func (d BlockDelta) MarshalJSON() ([]byte, error) {
	switch d.Type {
	case DeltaText:
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{d.Type, d.Text})
	case DeltaThinking:
		return json.Marshal(struct {
			Type     string `json:"type"`
			Thinking string `json:"thinking"`
		}{d.Type, d.Text})
	}
	return json.Marshal(struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}{d.Type, d.Text})
}

// ContentBlockStop is the payload of content_block_stop.
type ContentBlockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

// MessageDelta is the payload of message_delta: the stop reason and the
// final usage. Usage repeats input_tokens, as Anthropic's API does;
// clients take these as cumulative totals.
type MessageDelta struct {
	Type  string            `json:"type"`
	Delta MessageDeltaStop  `json:"delta"`
	Usage MessageDeltaUsage `json:"usage"`
	// Timings are llama-server's extension field.
	Timings *request.Timings `json:"timings,omitempty"`
}

// MessageDeltaStop is the delta of a message_delta.
type MessageDeltaStop struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// MessageDeltaUsage is the usage of a message_delta.
type MessageDeltaUsage struct {
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	CacheReadInputTokens int `json:"cache_read_input_tokens,omitempty"`
}

// MessageStop is the payload of message_stop.
type MessageStop struct {
	Type string `json:"type"`
}

// Stream turns one task's chunks into the events of a streamed answer, in
// Anthropic's order: message_start and a ping, then for each content block
// content_block_start, its deltas and content_block_stop, then
// message_delta with the stop reason and usage, and message_stop.
type Stream struct {
	blocks
	started bool
	inBlock bool // the last block is open (text or thinking; tool_use blocks close at once)
}

// NewStream returns a stream encoder for one answer.
func NewStream(m Meta) *Stream { return &Stream{blocks: blocks{meta: m}} }

// Start returns message_start and a ping, the first events of every stream,
// or nothing when they were already returned. Encode calls it; the caller
// calls it itself to open a stream before the first chunk arrives (so a
// client sees the answer begin during a long prompt evaluation).
// usage is nil when the prompt count is not known yet.
func (s *Stream) Start(usage *request.Usage) []Event {
	if s.started {
		return nil
	}
	s.started = true
	u := usageFrom(usage)
	u.OutputTokens = 0
	return []Event{
		{EventMessageStart, MessageStart{Type: EventMessageStart, Message: Message{
			ID: s.meta.ID, Type: typeMessage, Role: roleAssistant, Model: s.meta.Model,
			Content: []ContentBlock{}, Usage: u,
		}}},
		PingEvent(),
	}
}

// PingEvent returns a ping event, which streams send during long silences.
func PingEvent() Event { return Event{EventPing, Ping{Type: EventPing}} }

// Encode returns the events to send for c, in order; none for an error
// chunk (send [ErrorFrom] as an error event instead).
func (s *Stream) Encode(c request.Chunk) []Event {
	if c.Kind == request.ChunkError {
		return nil
	}
	out := s.Start(c.Usage)
	switch c.Kind {
	case request.ChunkDelta:
		if c.Reasoning != "" {
			out = s.text(out, BlockThinking, DeltaThinking, c.Reasoning)
		}
		if c.Content != "" {
			out = s.text(out, BlockText, DeltaText, c.Content)
		}
	case request.ChunkToolCall:
		if c.ToolCall == nil {
			break
		}
		out = s.closeBlock(out)
		b := s.appendToolCall(c.ToolCall)
		i := s.last()
		start := b
		start.Input = emptyInputObject
		out = append(out,
			Event{EventContentBlockStart, ContentBlockStart{Type: EventContentBlockStart, Index: i, ContentBlock: start}},
			Event{EventContentBlockDelta, ContentBlockDelta{Type: EventContentBlockDelta, Index: i, Delta: BlockDelta{Type: DeltaInputJSON, Text: b.Input}}},
			Event{EventContentBlockStop, ContentBlockStop{Type: EventContentBlockStop, Index: i}},
		)
	case request.ChunkDone:
		out = s.closeBlock(out)
		u := usageFrom(c.Usage)
		reason, seq := stopReason(c, s.toolCalls)
		out = append(out,
			Event{EventMessageDelta, MessageDelta{
				Type:    EventMessageDelta,
				Delta:   MessageDeltaStop{StopReason: reason, StopSequence: seq},
				Usage:   MessageDeltaUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadInputTokens: u.CacheReadInputTokens},
				Timings: timingsFrom(c.Usage),
			}},
			Event{EventMessageStop, MessageStop{Type: EventMessageStop}},
		)
	}
	return out
}

// text appends the events for text of a text or thinking block.
func (s *Stream) text(out []Event, block, delta, text string) []Event {
	if !s.inBlock || s.list[s.last()].Type != block {
		out = s.closeBlock(out)
		i := s.open(block)
		s.inBlock = true
		out = append(out, Event{EventContentBlockStart, ContentBlockStart{
			Type: EventContentBlockStart, Index: i, ContentBlock: ContentBlock{Type: block},
		}})
	}
	return append(out, Event{EventContentBlockDelta, ContentBlockDelta{
		Type: EventContentBlockDelta, Index: s.last(), Delta: BlockDelta{Type: delta, Text: text},
	}})
}

func (s *Stream) closeBlock(out []Event) []Event {
	if !s.inBlock {
		return out
	}
	s.inBlock = false
	return append(out, Event{EventContentBlockStop, ContentBlockStop{Type: EventContentBlockStop, Index: s.last()}})
}

// TokenCount is the answer of POST /v1/messages/count_tokens.
type TokenCount struct {
	InputTokens int `json:"input_tokens"`
}
