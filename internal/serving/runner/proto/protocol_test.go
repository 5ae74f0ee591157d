package proto

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
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
			line, err := MarshalLine(c)
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
	lr := NewLineReader(strings.NewReader(in), 50)
	want := []string{"short", "!", "", "ok", "!", strings.Repeat("y", 40), "last"}
	for i, w := range want {
		line, err := lr.Next()
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
	if _, err := lr.Next(); err != io.EOF {
		t.Fatalf("after the last line: %v, want EOF", err)
	}
}

// TestLineReaderBounded checks that a long line is not buffered whole.
func TestLineReaderBounded(t *testing.T) {
	r := io.MultiReader(strings.NewReader(strings.Repeat("z", 4<<20)), strings.NewReader("\nnext\n"))
	lr := NewLineReader(r, 1<<10)
	if _, err := lr.Next(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("got %v, want ErrLineTooLong", err)
	}
	if cap(lr.buf) > 64<<10 {
		t.Fatalf("the reader buffered %d bytes for a skipped line", cap(lr.buf))
	}
	if line, err := lr.Next(); err != nil || string(line) != "next" {
		t.Fatalf("after the long line: %q, %v", line, err)
	}
}
