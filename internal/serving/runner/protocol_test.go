package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
)

func TestDecodeCommand(t *testing.T) {
	tests := []struct {
		name string
		line string
		op   Op // "" = must fail
	}{
		{name: "load", line: `{"op":"load","load":{"model_path":"m.gguf","start":0,"end":0,"first":true,"last":true,"threads":2,"context_tokens":512,"instance":"i","rank":0}}`, op: OpLoad},
		{name: "generate", line: `{"op":"generate","generate":{"task":"t","request":{"model":"m","prompt":"hi","chat":false,"sampling":{"max_tokens":3}}}}`, op: OpGenerate},
		{name: "cancel", line: `{"op":"cancel","cancel":{"task":"t"}}`, op: OpCancel},
		{name: "shutdown", line: `{"op":"shutdown"}`, op: OpShutdown},
		{name: "not_json", line: `hello`},
		{name: "unknown_op", line: `{"op":"reboot"}`},
		{name: "unknown_field", line: `{"op":"shutdown","force":true}`},
		{name: "unknown_nested_field", line: `{"op":"load","load":{"model_path":"m","gpu":true}}`},
		{name: "missing_payload", line: `{"op":"cancel"}`},
		{name: "empty_task", line: `{"op":"cancel","cancel":{"task":""}}`},
		{name: "two_payloads", line: `{"op":"cancel","cancel":{"task":"t"},"load":{"model_path":"m"}}`},
		{name: "foreign_payload", line: `{"op":"shutdown","cancel":{"task":"t"}}`},
		{name: "trailing_data", line: `{"op":"shutdown"} {"op":"shutdown"}`},
		{name: "wrong_type", line: `{"op":"load","load":{"threads":"many"}}`},
		{name: "array", line: `[1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DecodeCommand([]byte(tt.line))
			if tt.op == "" {
				if err == nil || !errors.Is(err, ErrProtocol) {
					t.Fatalf("DecodeCommand = %+v, %v; want a protocol error", c, err)
				}
				return
			}
			if err != nil || c.Op != tt.op {
				t.Fatalf("DecodeCommand = %+v, %v; want op %s", c, err, tt.op)
			}
			line, err := marshalLine(c)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeCommand(bytes.TrimSuffix(line, []byte("\n")))
			if err != nil || again.Op != c.Op {
				t.Fatalf("round trip: %+v, %v", again, err)
			}
		})
	}
}

func TestDecodeMessage(t *testing.T) {
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{name: "status", line: `{"type":"status","status":{"state":"ready","weight_bytes":10,"context_tokens":5}}`, ok: true},
		{name: "chunk", line: `{"type":"chunk","task":"t","chunk":{"kind":"delta","content":"x"}}`, ok: true},
		{name: "error", line: `{"type":"error","error":{"class":"invalid_request","message":"bad"}}`, ok: true},
		{name: "chunk_without_task", line: `{"type":"chunk","chunk":{"kind":"delta"}}`},
		{name: "status_with_chunk", line: `{"type":"status","status":{"state":"ready"},"task":"t","chunk":{"kind":"done"}}`},
		{name: "unknown_type", line: `{"type":"log","status":{"state":"ready"}}`},
		{name: "unknown_field", line: `{"type":"status","status":{"state":"ready","gpu":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeMessage([]byte(tt.line))
			if (err == nil) != tt.ok {
				t.Fatalf("DecodeMessage(%s) = %v, want ok=%v", tt.line, err, tt.ok)
			}
		})
	}
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := "short\n" + long + "\n\r\nok\r\n" + long + "\n" + strings.Repeat("y", 40) + "\nlast"
	lr := newLineReader(strings.NewReader(in), 50)
	want := []string{"short", "!", "", "ok", "!", strings.Repeat("y", 40), "last"}
	for i, w := range want {
		line, err := lr.next()
		if w == "!" {
			if !errors.Is(err, ErrLineTooLong) || !errors.Is(err, ErrProtocol) {
				t.Fatalf("line %d: %q, %v; want ErrLineTooLong", i, line, err)
			}
			continue
		}
		if err != nil || string(line) != w {
			t.Fatalf("line %d: %q, %v; want %q", i, line, err, w)
		}
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
}

// TestLineReaderBounded checks that a long line is not buffered whole.
func TestLineReaderBounded(t *testing.T) {
	r := io.MultiReader(strings.NewReader(strings.Repeat("z", 4<<20)), strings.NewReader("\nnext\n"))
	lr := newLineReader(r, 1<<10)
	if _, err := lr.next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("got %v, want ErrLineTooLong", err)
	}
	if cap(lr.buf) > 64<<10 {
		t.Fatalf("the reader buffered %d bytes for a skipped line", cap(lr.buf))
	}
	if line, err := lr.next(); err != nil || string(line) != "next" {
		t.Fatalf("after the long line: %q, %v", line, err)
	}
}

// TestMalformedLines writes bad lines to a real runner child, which must
// answer each and keep serving.
func TestMalformedLines(t *testing.T) {
	p, err := supervise.Start(t.Context(), childSpec("runner"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Kill(ctx)
	})
	msgs := make(chan Message, 16)
	go func() {
		defer close(msgs)
		lr := newLineReader(p.Stdout(), MaxLine)
		for {
			line, err := lr.next()
			if err != nil {
				return
			}
			m, err := DecodeMessage(line)
			if err != nil {
				t.Errorf("the runner wrote a bad line %q: %v", line, err)
				return
			}
			if m.Type == TypeProgress {
				continue // heartbeats come whatever the lines written
			}
			msgs <- m
		}
	}()
	next := func() Message {
		t.Helper()
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatal("the runner's stdout ended")
			}
			return m
		case <-time.After(30 * time.Second):
			t.Fatal("no answer from the runner")
		}
		return Message{}
	}
	write := func(line string) {
		t.Helper()
		if _, err := io.WriteString(p.Stdin(), line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		line  string
		typ   MessageType
		class fault.Class
		says  string
	}{
		{name: "not_json", line: "this is not json", typ: TypeError, class: fault.ClassInvalid, says: "malformed"},
		{name: "unknown_op", line: `{"op":"reboot"}`, typ: TypeError, class: fault.ClassInvalid, says: "unknown op"},
		{name: "unknown_field", line: `{"op":"load","load":{"model_path":"m"},"extra":1}`, typ: TypeError, class: fault.ClassInvalid, says: "unknown field"},
		{name: "missing_payload", line: `{"op":"generate"}`, typ: TypeError, class: fault.ClassInvalid, says: "payload"},
		{name: "oversized", line: `{"op":"load","load":{"model_path":"` + strings.Repeat("a", MaxLine) + `"}}`, typ: TypeError, class: fault.ClassInvalid, says: "longer than"},
		{name: "generate_before_load", line: `{"op":"generate","generate":{"task":"early","request":{"model":"m","prompt":"x","chat":false,"sampling":{}}}}`, typ: TypeChunk, class: fault.ClassUnavailable, says: "not ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write(tt.line)
			m := next()
			if m.Type != tt.typ {
				t.Fatalf("answer %+v, want type %s", m, tt.typ)
			}
			e := m.Error
			if m.Type == TypeChunk {
				if m.Chunk.Kind != request.ChunkError {
					t.Fatalf("chunk %+v, want an error chunk", m.Chunk)
				}
				e = m.Chunk.Error
			}
			if e.Class != tt.class || !strings.Contains(e.Message, tt.says) {
				t.Fatalf("error %+v, want class %s saying %q", e, tt.class, tt.says)
			}
		})
	}
	// A cancel for an unknown task is not answered; the load that follows is.
	write(`{"op":"cancel","cancel":{"task":"nobody"}}`)
	write(fmt.Sprintf(`{"op":"load","load":{"model_path":%q,"threads":1}}`, modelPath(t)))
	for _, want := range []State{StateLoading, StateWarming, StateReady} {
		if m := next(); m.Type != TypeStatus || m.Status.State != want {
			t.Fatalf("got %+v, want status %s", m, want)
		}
	}
	write(`{"op":"load","load":{"model_path":"again"}}`)
	if m := next(); m.Type != TypeError || m.Error.Class != fault.ClassConflict {
		t.Fatalf("second load: %+v, want a conflict error", m)
	}
	write(`{"op":"shutdown"}`)
	if m := next(); m.Type != TypeStatus || m.Status.State != StateStopped {
		t.Fatalf("got %+v, want status stopped", m)
	}
	p.Stdin().Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if e, err := p.Wait(ctx); err != nil || !e.Success() {
		t.Fatalf("runner exit: %s, %v", e, err)
	}
}

func TestSamplingParams(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	seed := uint64(42)
	tests := []struct {
		name       string
		in         request.Sampling
		temp, topP float32
		seed       uint64
	}{
		{name: "defaults", in: request.Sampling{}, temp: DefaultTemperature, topP: DefaultTopP, seed: 7},
		{name: "greedy", in: request.Sampling{Temperature: f(0)}, temp: 0, topP: DefaultTopP, seed: 7},
		{name: "explicit", in: request.Sampling{Temperature: f(1.3), TopP: f(1), Seed: &seed, TopK: 5, MinP: 0.1}, temp: 1.3, topP: 1, seed: 42},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := samplingParams(tt.in, func() uint64 { return 7 })
			if p.Temperature != tt.temp || p.TopP != tt.topP || p.Seed != tt.seed || p.TopK != tt.in.TopK || p.MinP != float32(tt.in.MinP) {
				t.Fatalf("params %+v", p)
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRepeatWindow: the request's window reaches the sampler, and an empty
// one turns every penalty off.
func TestRepeatWindow(t *testing.T) {
	n := func(v int) *int { return &v }
	pen := request.Sampling{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25}
	tests := []struct {
		name   string
		window *int
		want   sample.Params // only the penalty fields are compared
	}{
		{"default", nil, sample.Params{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25, RepeatLastN: 64}},
		{"window", n(8), sample.Params{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25, RepeatLastN: 8}},
		{"whole answer", n(-1), sample.Params{RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.25, RepeatLastN: -1}},
		{"off", n(0), sample.Params{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := pen
			in.RepeatLastN = tt.window
			p := samplingParams(in, func() uint64 { return 7 })
			got := sample.Params{RepeatPenalty: p.RepeatPenalty, PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty, RepeatLastN: p.RepeatLastN}
			if got != tt.want {
				t.Fatalf("penalties %+v, want %+v", got, tt.want)
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMainFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "zero_slots", args: []string{"-slots", "0"}},
		{name: "bad_level", args: []string{"-log-level", "loud"}},
		{name: "stray_argument", args: []string{"extra"}},
		{name: "unknown_flag", args: []string{"-gpu"}},
		{name: "unknown_kernels", args: []string{"-kernels", "sse9"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := Main(t.Context(), strings.NewReader(""), &out, &errOut, tt.args); err == nil {
				t.Fatal("Main accepted bad flags")
			}
			if out.Len() != 0 {
				t.Fatalf("Main wrote %q to stdout", out.String())
			}
		})
	}
}

// TestMainEndOfInput runs Main in process: the end of stdin shuts it down
// with a stopped status.
func TestMainEndOfInput(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := Main(t.Context(), strings.NewReader(`{"op":"cancel","cancel":{"task":"x"}}`+"\n"), &out, &errOut, nil); err != nil {
		t.Fatal(err)
	}
	// The first heartbeat comes first; the last line is the stopped status.
	lines := bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
	m, err := DecodeMessage(lines[len(lines)-1])
	if err != nil || m.Type != TypeStatus || m.Status.State != StateStopped {
		t.Fatalf("output %q: %+v, %v", out.String(), m, err)
	}
	if first, err := DecodeMessage(lines[0]); err != nil || first.Type != TypeProgress {
		t.Fatalf("output %q: the first line is not a heartbeat", out.String())
	}
}
