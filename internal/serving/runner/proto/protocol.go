package proto

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
)

// MaxLine bounds one protocol line in bytes, newline excluded.
const MaxLine = 8 << 20

// Op names a parent-to-child command.
type Op string

// Ops.
const (
	OpLoad     Op = "load"
	OpGenerate Op = "generate"
	OpCancel   Op = "cancel"
	OpShutdown Op = "shutdown"
	OpEmbed    Op = "embed"
)

// Command is one parent-to-child line. Exactly the payload that Op names is
// set.
type Command struct {
	Op       Op           `json:"op"`
	Load     *LoadSpec    `json:"load,omitempty"`
	Generate *GenerateCmd `json:"generate,omitempty"`
	Cancel   *CancelCmd   `json:"cancel,omitempty"`
	Embed    *EmbedCmd    `json:"embed,omitempty"`
}

// LoadSpec says what to load. Start and End select blocks [Start, End);
// both zero means the whole model. Only whole models are served for now.
type LoadSpec struct {
	ModelPath            string `json:"model_path"`
	Start                int    `json:"start"`
	End                  int    `json:"end"`
	First                bool   `json:"first"`
	Last                 bool   `json:"last"`
	Threads              int    `json:"threads"`                          // 0 = physical cores
	ContextTokens        int    `json:"context_tokens"`                   // 0 = the model's trained length
	ChatTemplateOverride string `json:"chat_template_override,omitempty"` // replaces the GGUF's template
	Instance             string `json:"instance,omitempty"`
	Rank                 int    `json:"rank"`
	// Pipeline, when set, makes the runner one stage of a model split by
	// layers: it loads blocks [Start, End) and joins its neighbours through
	// the node's edge socket.
	Pipeline *PipelineSpec `json:"pipeline,omitempty"`
	// CacheType is the K/V cache element type: "" or "f16", "f32", "q8_0",
	// "q4_0" (llama.cpp's -ctk/-ctv).
	CacheType string `json:"cache_type,omitempty"`
	// Speculative sets up speculative decoding of greedy requests; nil:
	// none.
	Speculative *SpeculativeSpec `json:"speculative,omitempty"`
}

// SpeculativeSpec configures speculative decoding (speculative.go).
type SpeculativeSpec struct {
	// Mode is SpeculativeLookup (prompt lookup, no draft model) or
	// SpeculativeDraft (DraftModelPath drafts).
	Mode           string `json:"mode"`
	DraftModelPath string `json:"draft_model_path,omitempty"`
	// DraftMax caps the tokens drafted per verification pass; 0 =
	// engine.DefaultDraftMax.
	DraftMax int `json:"draft_max,omitempty"`
}

// PipelineSpec wires a runner into a pipeline of Ranks stages.
type PipelineSpec struct {
	Ranks int `json:"ranks"`
	// Socket is the node's edge socket (a Unix-domain socket).
	Socket string `json:"socket"`
	// ConnectTimeoutMS bounds the wait for both links to connect; 0 means
	// DefaultConnectTimeout.
	ConnectTimeoutMS int `json:"connect_timeout_ms,omitempty"`
}

// GenerateCmd starts task Task.
type GenerateCmd struct {
	Task    string          `json:"task"`
	Request request.Request `json:"request"`
}

// EmbedCmd starts embedding task Task.
type EmbedCmd struct {
	Task    string               `json:"task"`
	Request request.EmbedRequest `json:"request"`
}

// CancelCmd cancels task Task; cancelling a finished or unknown task does
// nothing.
type CancelCmd struct {
	Task string `json:"task"`
}

// MessageType names a child-to-parent line.
type MessageType string

// Message types.
const (
	TypeStatus MessageType = "status"
	TypeChunk  MessageType = "chunk"
	TypeError  MessageType = "error"
	// TypeEmbedding answers an embed command: it carries the task's
	// Embedding or its Error, and ends the task.
	TypeEmbedding MessageType = "embedding"
	// TypeProgress is the runner's heartbeat (see watchdog.go).
	TypeProgress MessageType = "progress"
)

// Message is one child-to-parent line.
type Message struct {
	Type   MessageType    `json:"type"`
	Task   string         `json:"task,omitempty"`
	Status *Status        `json:"status,omitempty"`
	Chunk  *request.Chunk `json:"chunk,omitempty"`
	Error  *fault.Error   `json:"error,omitempty"`

	Embedding *request.EmbedResult `json:"embedding,omitempty"`
	Progress  *Progress            `json:"progress,omitempty"`
}

// State is a runner's lifecycle state.
type State string

// States.
const (
	StateLoading State = "loading"
	StateWarming State = "warming"
	StateReady   State = "ready"
	StateFailed  State = "failed"
	StateStopped State = "stopped"
)

// Status is a runner's state report.
type Status struct {
	State         State  `json:"state"`
	Reason        string `json:"reason,omitempty"`
	WeightBytes   int64  `json:"weight_bytes,omitempty"`
	ContextTokens int    `json:"context_tokens,omitempty"`
	// BytesPerToken, when not 0, bounds the text one token stands for: a
	// prompt of more than ContextTokens × BytesPerToken bytes cannot fit,
	// which the node checks before the prompt crosses the runner's pipe.
	BytesPerToken int `json:"bytes_per_token,omitempty"`
}

// ErrProtocol is matched (errors.Is) by every *ProtocolError.
var ErrProtocol = errors.New("runner: protocol error")

// ProtocolError is a line that breaks the wire protocol.
type ProtocolError struct {
	Reason string
	Err    error
}

func (e *ProtocolError) Error() string {
	if e.Err != nil {
		return "runner: protocol: " + e.Reason + ": " + e.Err.Error()
	}
	return "runner: protocol: " + e.Reason
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrProtocol) true.
func (e *ProtocolError) Is(target error) bool { return target == ErrProtocol }

// ErrLineTooLong is returned (wrapped in a *ProtocolError) for a line over
// MaxLine bytes; the line has been skipped.
var ErrLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLine)

// strictUnmarshal decodes one JSON value, refusing unknown fields and
// trailing data.
func strictUnmarshal(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

// DecodeCommand decodes one parent-to-child line strictly.
func DecodeCommand(line []byte) (Command, error) {
	var c Command
	if err := strictUnmarshal(line, &c); err != nil {
		return Command{}, &ProtocolError{Reason: "malformed command", Err: err}
	}
	payloads := 0
	for _, set := range []bool{c.Load != nil, c.Generate != nil, c.Cancel != nil, c.Embed != nil} {
		if set {
			payloads++
		}
	}
	var want bool
	switch c.Op {
	case OpLoad:
		want = c.Load != nil
	case OpGenerate:
		want = c.Generate != nil && c.Generate.Task != ""
	case OpCancel:
		want = c.Cancel != nil && c.Cancel.Task != ""
	case OpEmbed:
		want = c.Embed != nil && c.Embed.Task != ""
	case OpShutdown:
		want = payloads == 0
	default:
		return Command{}, &ProtocolError{Reason: fmt.Sprintf("unknown op %q", c.Op)}
	}
	if !want || payloads > 1 {
		return Command{}, &ProtocolError{Reason: fmt.Sprintf("op %q needs exactly its own payload (with a task id for generate, embed and cancel)", c.Op)}
	}
	return c, nil
}

// DecodeMessage decodes one child-to-parent line strictly.
func DecodeMessage(line []byte) (Message, error) {
	var m Message
	if err := strictUnmarshal(line, &m); err != nil {
		return Message{}, &ProtocolError{Reason: "malformed message", Err: err}
	}
	var ok bool
	if m.Progress != nil && m.Type != TypeProgress {
		return Message{}, &ProtocolError{Reason: fmt.Sprintf("message type %q needs exactly its own payload", m.Type)}
	}
	switch m.Type {
	case TypeProgress:
		ok = m.Progress != nil && m.Task == "" && m.Status == nil && m.Chunk == nil && m.Error == nil && m.Embedding == nil
	case TypeStatus:
		ok = m.Status != nil && m.Chunk == nil && m.Error == nil && m.Embedding == nil
	case TypeChunk:
		ok = m.Chunk != nil && m.Task != "" && m.Status == nil && m.Error == nil && m.Embedding == nil
	case TypeError:
		ok = m.Error != nil && m.Status == nil && m.Chunk == nil && m.Embedding == nil
	case TypeEmbedding:
		ok = m.Task != "" && (m.Embedding != nil) != (m.Error != nil) && m.Status == nil && m.Chunk == nil
	default:
		return Message{}, &ProtocolError{Reason: fmt.Sprintf("unknown message type %q", m.Type)}
	}
	if !ok {
		return Message{}, &ProtocolError{Reason: fmt.Sprintf("message type %q needs exactly its own payload", m.Type)}
	}
	return m, nil
}

// LineReader reads newline-terminated lines of at most max bytes. A longer
// line is skipped without being buffered whole, and reported as
// ErrLineTooLong. It is not safe for concurrent use.
type LineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// NewLineReader returns a LineReader of r's lines of at most max bytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its newline. The slice is valid until
// the next call. A final line without a newline is returned before io.EOF.
func (l *LineReader) Next() ([]byte, error) {
	l.buf = l.buf[:0]
	tooLong := false
	for {
		frag, err := l.br.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(frag) > l.max+1 { // +1: the newline
				tooLong = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, frag...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			if tooLong {
				return nil, &ProtocolError{Reason: "oversized line skipped", Err: ErrLineTooLong}
			}
			return bytes.TrimSuffix(l.buf[:len(l.buf)-1], []byte{'\r'}), nil
		case tooLong:
			return nil, &ProtocolError{Reason: "oversized line skipped", Err: ErrLineTooLong}
		case len(l.buf) > 0 && errors.Is(err, io.EOF):
			return l.buf, nil // the next call returns EOF
		default:
			return nil, err
		}
	}
}

// MarshalLine encodes v as one line, newline included.
func MarshalLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// HeartbeatInterval is how often a runner reports its Progress (see
// package client's watchdog).
const HeartbeatInterval = 250 * time.Millisecond

// Progress is a runner's heartbeat.
type Progress struct {
	Steps  uint64 `json:"steps"`             // model steps completed since the runner started
	InStep bool   `json:"in_step,omitempty"` // a step is running now
}

// Speculative decoding modes (SpeculativeSpec.Mode).
const (
	SpeculativeLookup = "lookup" // prompt lookup: n-gram drafts from the sequence itself
	SpeculativeDraft  = "draft"  // a draft model of the same vocabulary
)
