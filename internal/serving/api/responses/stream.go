package responses

import (
	"fmt"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// Event is one typed server-sent event of a streamed response. Its type is
// both the SSE event name and the payload's "type" field.
type Event interface{ EventType() string }

// Event types, as openai@6.30.1's ResponseStreamEvent names them.
const (
	EventCreated            = "response.created"
	EventInProgress         = "response.in_progress"
	EventCompleted          = "response.completed"
	EventIncomplete         = "response.incomplete"
	EventFailed             = "response.failed"
	EventOutputItemAdded    = "response.output_item.added"
	EventOutputItemDone     = "response.output_item.done"
	EventContentPartAdded   = "response.content_part.added"
	EventContentPartDone    = "response.content_part.done"
	EventOutputTextDelta    = "response.output_text.delta"
	EventOutputTextDone     = "response.output_text.done"
	EventReasoningTextDelta = "response.reasoning_text.delta"
	EventReasoningTextDone  = "response.reasoning_text.done"
	EventArgumentsDelta     = "response.function_call_arguments.delta"
	EventArgumentsDone      = "response.function_call_arguments.done"
	EventError              = "error"
)

// ResponseEvent carries the Response object: created, in_progress,
// completed, incomplete and failed.
type ResponseEvent struct {
	Type           string   `json:"type"`
	SequenceNumber int      `json:"sequence_number"`
	Response       Response `json:"response"`
}

// OutputItemEvent announces an output item (added) or finishes it (done).
type OutputItemEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	OutputIndex    int    `json:"output_index"`
	Item           Item   `json:"item"`
}

// ContentPartEvent announces a content part (added) or finishes it (done).
// Part is an OutputText or a ReasoningText.
type ContentPartEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Part           any    `json:"part"`
}

// TextDeltaEvent adds text to an output_text part.
type TextDeltaEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	ItemID         string         `json:"item_id"`
	OutputIndex    int            `json:"output_index"`
	ContentIndex   int            `json:"content_index"`
	Delta          string         `json:"delta"`
	Logprobs       []DeltaLogprob `json:"logprobs"`
}

// TextDoneEvent finishes an output_text part.
type TextDoneEvent struct {
	Type           string         `json:"type"`
	SequenceNumber int            `json:"sequence_number"`
	ItemID         string         `json:"item_id"`
	OutputIndex    int            `json:"output_index"`
	ContentIndex   int            `json:"content_index"`
	Text           string         `json:"text"`
	Logprobs       []DeltaLogprob `json:"logprobs"`
}

// DeltaLogprob is a token's log-probability in text events.
type DeltaLogprob struct {
	Token       string            `json:"token"`
	Logprob     float64           `json:"logprob"`
	TopLogprobs []DeltaTopLogprob `json:"top_logprobs"`
}

// DeltaTopLogprob is one alternative in text events.
type DeltaTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// ReasoningDeltaEvent adds text to a reasoning_text part.
type ReasoningDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Delta          string `json:"delta"`
}

// ReasoningDoneEvent finishes a reasoning_text part.
type ReasoningDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	ContentIndex   int    `json:"content_index"`
	Text           string `json:"text"`
}

// ArgumentsDeltaEvent adds to a function call's arguments.
type ArgumentsDeltaEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Delta          string `json:"delta"`
}

// ArgumentsDoneEvent finishes a function call's arguments.
type ArgumentsDoneEvent struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
	Name           string `json:"name"`
	Arguments      string `json:"arguments"`
}

// ErrorEvent reports a failure after the stream began.
type ErrorEvent struct {
	Type           string  `json:"type"` // "error"
	SequenceNumber int     `json:"sequence_number"`
	Code           *string `json:"code"`
	Message        string  `json:"message"`
	Param          *string `json:"param"`
}

func (e *ResponseEvent) EventType() string       { return e.Type }
func (e *OutputItemEvent) EventType() string     { return e.Type }
func (e *ContentPartEvent) EventType() string    { return e.Type }
func (e *TextDeltaEvent) EventType() string      { return e.Type }
func (e *TextDoneEvent) EventType() string       { return e.Type }
func (e *ReasoningDeltaEvent) EventType() string { return e.Type }
func (e *ReasoningDoneEvent) EventType() string  { return e.Type }
func (e *ArgumentsDeltaEvent) EventType() string { return e.Type }
func (e *ArgumentsDoneEvent) EventType() string  { return e.Type }
func (e *ErrorEvent) EventType() string          { return e.Type }

// Builder folds one task's chunks into a Response and, on the way, says
// which stream events each chunk makes. The streamed and the whole answer
// come from the same Builder, so they cannot disagree. A Builder is not safe
// for concurrent use.
//
// Items follow the order of the chunks: reasoning text opens a reasoning
// item, content text a message item, each tool call a function_call item;
// a change of kind closes the open item. The done chunk closes the open
// item and ends the response: completed, incomplete (max_output_tokens)
// when the finish reason is length, or cancelled when an operator
// cancelled the task.
type Builder struct {
	resp   Response
	unique string // the id's unique part, shared by the item ids
	seq    int

	open     Item // the open reasoning or message item; nil when none
	text     strings.Builder
	lps      []Logprob
	finished bool
	calls    int // function calls so far, for call ids the runner left empty
}

// NewBuilder starts the Response m identifies for the request d.
func NewBuilder(m Meta, d *Decoded) *Builder {
	e := d.Echo
	r := Response{
		ID: m.ID, Object: "response", CreatedAt: m.Created, Status: StatusInProgress,
		Instructions: e.Instructions, MaxOutputTokens: e.MaxOutputTokens, Metadata: e.Metadata,
		Model: m.Model, Output: []Item{}, ParallelToolCalls: e.ParallelToolCalls,
		Reasoning: e.Reasoning, Temperature: e.Temperature, Text: e.Text,
		ToolChoice: e.ToolChoice, Tools: e.Tools, TopP: e.TopP,
		Truncation: "disabled", User: e.User,
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	if r.Tools == nil {
		r.Tools = []FunctionTool{}
	}
	if r.ToolChoice == nil {
		r.ToolChoice = "auto"
	}
	if r.Text.Format.Type == "" {
		r.Text.Format.Type = "text"
	}
	if m.PreviousResponseID != "" {
		prev := m.PreviousResponseID
		r.PreviousResponseID = &prev
	}
	return &Builder{resp: r, unique: strings.TrimPrefix(m.ID, IDPrefix)}
}

// Start returns the first events of a stream: response.created and
// response.in_progress.
func (b *Builder) Start() []Event {
	return []Event{b.responseEvent(EventCreated), b.responseEvent(EventInProgress)}
}

// Response returns the Response as it stands.
func (b *Builder) Response() Response {
	r := b.resp
	r.Output = make([]Item, len(b.resp.Output))
	for i, it := range b.resp.Output {
		r.Output[i] = snapshot(it)
	}
	return r
}

// Done reports whether a done chunk or a failure ended the response.
func (b *Builder) Done() bool { return b.finished }

func (b *Builder) next() int {
	b.seq++
	return b.seq - 1
}

func (b *Builder) responseEvent(typ string) *ResponseEvent {
	return &ResponseEvent{Type: typ, SequenceNumber: b.next(), Response: b.Response()}
}

func (b *Builder) itemID(prefix string) string {
	return fmt.Sprintf("%s_%s_%d", prefix, b.unique, len(b.resp.Output))
}

// Add folds c into the response and returns the events it makes, in
// order. Error chunks are the caller's: see [Builder.Fail].
func (b *Builder) Add(c request.Chunk) []Event {
	if b.finished {
		return nil
	}
	var out []Event
	switch c.Kind {
	case request.ChunkDelta:
		if c.Reasoning != "" {
			out = b.reasoningDelta(out, c.Reasoning)
		}
		if c.Content != "" || len(c.Logprobs) > 0 {
			out = b.textDelta(out, c.Content, c.Logprobs)
		}
	case request.ChunkToolCall:
		if c.ToolCall != nil {
			out = b.toolCall(out, *c.ToolCall)
		}
	case request.ChunkDone:
		out = b.done(out, c)
	}
	return out
}

func (b *Builder) reasoningDelta(out []Event, delta string) []Event {
	it, ok := b.open.(*ReasoningItem)
	if !ok {
		out = b.closeOpen(out, StatusCompleted)
		idx := len(b.resp.Output)
		it = &ReasoningItem{Type: TypeReasoning, ID: b.itemID("rs"), Status: StatusInProgress, Summary: []SummaryText{}, Content: []ReasoningText{}}
		b.resp.Output = append(b.resp.Output, it)
		b.open = it
		out = append(out, &OutputItemEvent{Type: EventOutputItemAdded, SequenceNumber: b.next(), OutputIndex: idx, Item: snapshot(it)})
		part := ReasoningText{Type: "reasoning_text"}
		it.Content = append(it.Content, part)
		out = append(out, &ContentPartEvent{Type: EventContentPartAdded, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Part: part})
	}
	b.text.WriteString(delta)
	return append(out, &ReasoningDeltaEvent{Type: EventReasoningTextDelta, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: len(b.resp.Output) - 1, Delta: delta})
}

func (b *Builder) textDelta(out []Event, delta string, lps []request.TokenLogprob) []Event {
	it, ok := b.open.(*MessageItem)
	if !ok {
		out = b.closeOpen(out, StatusCompleted)
		idx := len(b.resp.Output)
		it = &MessageItem{Type: TypeMessage, ID: b.itemID("msg"), Status: StatusInProgress, Role: string(request.RoleAssistant), Content: []OutputText{}}
		b.resp.Output = append(b.resp.Output, it)
		b.open = it
		out = append(out, &OutputItemEvent{Type: EventOutputItemAdded, SequenceNumber: b.next(), OutputIndex: idx, Item: snapshot(it)})
		part := OutputText{Type: "output_text", Annotations: []any{}}
		it.Content = append(it.Content, part)
		out = append(out, &ContentPartEvent{Type: EventContentPartAdded, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Part: part})
	}
	b.text.WriteString(delta)
	lp := logprobs(lps)
	b.lps = append(b.lps, lp...)
	return append(out, &TextDeltaEvent{Type: EventOutputTextDelta, SequenceNumber: b.next(), ItemID: it.ID,
		OutputIndex: len(b.resp.Output) - 1, Delta: delta, Logprobs: deltaLogprobs(lp)})
}

func deltaLogprobs(in []Logprob) []DeltaLogprob {
	out := make([]DeltaLogprob, 0, len(in))
	for _, t := range in {
		top := make([]DeltaTopLogprob, 0, len(t.TopLogprobs))
		for _, a := range t.TopLogprobs {
			top = append(top, DeltaTopLogprob{Token: a.Token, Logprob: a.Logprob})
		}
		out = append(out, DeltaLogprob{Token: t.Token, Logprob: t.Logprob, TopLogprobs: top})
	}
	return out
}

// closeOpen finishes the open item with status and returns its closing
// events.
func (b *Builder) closeOpen(out []Event, status string) []Event {
	if b.open == nil {
		return out
	}
	idx := len(b.resp.Output) - 1
	text := b.text.String()
	b.text.Reset()
	switch it := b.open.(type) {
	case *ReasoningItem:
		it.Content[0].Text = text
		it.Status = status
		out = append(out,
			&ReasoningDoneEvent{Type: EventReasoningTextDone, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Text: text},
			&ContentPartEvent{Type: EventContentPartDone, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Part: it.Content[0]})
	case *MessageItem:
		it.Content[0].Text = text
		it.Content[0].Logprobs = b.lps
		it.Status = status
		out = append(out,
			&TextDoneEvent{Type: EventOutputTextDone, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Text: text, Logprobs: deltaLogprobs(b.lps)},
			&ContentPartEvent{Type: EventContentPartDone, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Part: it.Content[0]})
		b.lps = nil
	}
	out = append(out, &OutputItemEvent{Type: EventOutputItemDone, SequenceNumber: b.next(), OutputIndex: idx, Item: snapshot(b.open)})
	b.open = nil
	return out
}

// toolCall adds a whole function call: runners parse calls whole, so its
// arguments arrive in one delta.
func (b *Builder) toolCall(out []Event, tc request.ToolCall) []Event {
	out = b.closeOpen(out, StatusCompleted)
	idx := len(b.resp.Output)
	callID := tc.ID
	if callID == "" {
		callID = fmt.Sprintf("call_%s_%d", b.unique, b.calls)
	}
	b.calls++
	it := &FunctionCallItem{Type: TypeFunctionCall, ID: b.itemID("fc"), CallID: callID, Name: tc.Name, Status: StatusInProgress}
	b.resp.Output = append(b.resp.Output, it)
	out = append(out, &OutputItemEvent{Type: EventOutputItemAdded, SequenceNumber: b.next(), OutputIndex: idx, Item: snapshot(it)})
	it.Arguments, it.Status = tc.Arguments, StatusCompleted
	return append(out,
		&ArgumentsDeltaEvent{Type: EventArgumentsDelta, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Delta: tc.Arguments},
		&ArgumentsDoneEvent{Type: EventArgumentsDone, SequenceNumber: b.next(), ItemID: it.ID, OutputIndex: idx, Name: it.Name, Arguments: it.Arguments},
		&OutputItemEvent{Type: EventOutputItemDone, SequenceNumber: b.next(), OutputIndex: idx, Item: snapshot(it)})
}

func (b *Builder) done(out []Event, c request.Chunk) []Event {
	b.finished = true
	status, terminal := StatusCompleted, EventCompleted
	switch c.FinishReason {
	case request.FinishLength:
		status, terminal = StatusIncomplete, EventIncomplete
		b.resp.IncompleteDetails = &IncompleteDetails{Reason: "max_output_tokens"}
	case request.FinishCancelled:
		status, terminal = StatusCancelled, EventIncomplete
	}
	itemStatus := status
	if status == StatusCancelled {
		itemStatus = StatusIncomplete
	}
	out = b.closeOpen(out, itemStatus)
	b.resp.Status = status
	u := Usage{}
	if c.Usage != nil {
		u.InputTokens, u.OutputTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
		u.InputTokensDetails.CachedTokens = c.Usage.CachedTokens
		b.resp.Timings = c.Usage.Timings
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	b.resp.Usage = &u
	return append(out, b.responseEvent(terminal))
}

// Fail ends the response as failed with e: it returns an error event and
// a response.failed event carrying the response as it stood.
func (b *Builder) Fail(e *fault.Error) []Event {
	if b.finished {
		return nil
	}
	b.finished = true
	var out []Event
	ev := &ErrorEvent{Type: EventError, SequenceNumber: b.next(), Code: eventCode(e), Message: e.Message}
	if e.Param != "" {
		p := e.Param
		ev.Param = &p
	}
	out = append(out, ev)
	out = b.closeOpen(out, StatusIncomplete)
	b.resp.Status = StatusFailed
	b.resp.Error = &ResponseError{Code: errorCode(e.Class), Message: e.Message}
	return append(out, b.responseEvent(EventFailed))
}

// Messages returns the response's output as conversation messages, for a
// later previous_response_id: one assistant message holding the text, the
// reasoning and the tool calls.
func (b *Builder) Messages() []request.Message {
	m := request.Message{Role: request.RoleAssistant}
	var content, reasoning strings.Builder
	for _, it := range b.resp.Output {
		switch it := it.(type) {
		case *MessageItem:
			content.WriteString(joinText(it.Content))
		case *ReasoningItem:
			for _, p := range it.Content {
				reasoning.WriteString(p.Text)
			}
		case *FunctionCallItem:
			m.ToolCalls = append(m.ToolCalls, request.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		}
	}
	m.Content, m.ReasoningContent = content.String(), reasoning.String()
	return []request.Message{m}
}

// snapshot copies an item, so an event keeps the item as it was when the
// event was made.
func snapshot(it Item) Item {
	switch it := it.(type) {
	case *MessageItem:
		c := *it
		c.Content = append([]OutputText{}, it.Content...)
		return &c
	case *ReasoningItem:
		c := *it
		c.Summary = append([]SummaryText{}, it.Summary...)
		c.Content = append([]ReasoningText{}, it.Content...)
		return &c
	case *FunctionCallItem:
		c := *it
		return &c
	}
	return it
}
