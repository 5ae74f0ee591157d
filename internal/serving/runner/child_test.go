package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

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
	msgs := make(chan proto.Message, 16)
	go func() {
		defer close(msgs)
		lr := proto.NewLineReader(p.Stdout(), proto.MaxLine)
		for {
			line, err := lr.Next()
			if err != nil {
				return
			}
			m, err := proto.DecodeMessage(line)
			if err != nil {
				t.Errorf("the runner wrote a bad line %q: %v", line, err)
				return
			}
			if m.Type == proto.TypeProgress {
				continue // heartbeats come whatever the lines written
			}
			msgs <- m
		}
	}()
	next := func() proto.Message {
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
		return proto.Message{}
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
		typ   proto.MessageType
		class fault.Class
		says  string
	}{
		{name: "not_json", line: "this is not json", typ: proto.TypeError, class: fault.ClassInvalid, says: "malformed"},
		{name: "unknown_op", line: `{"op":"reboot"}`, typ: proto.TypeError, class: fault.ClassInvalid, says: "unknown op"},
		{name: "unknown_field", line: `{"op":"load","load":{"model_path":"m"},"extra":1}`, typ: proto.TypeError, class: fault.ClassInvalid, says: "unknown field"},
		{name: "missing_payload", line: `{"op":"generate"}`, typ: proto.TypeError, class: fault.ClassInvalid, says: "payload"},
		{name: "oversized", line: `{"op":"load","load":{"model_path":"` + strings.Repeat("a", proto.MaxLine) + `"}}`, typ: proto.TypeError, class: fault.ClassInvalid, says: "longer than"},
		{name: "generate_before_load", line: `{"op":"generate","generate":{"task":"early","request":{"model":"m","prompt":"x","chat":false,"sampling":{}}}}`, typ: proto.TypeChunk, class: fault.ClassUnavailable, says: "not ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write(tt.line)
			m := next()
			if m.Type != tt.typ {
				t.Fatalf("answer %+v, want type %s", m, tt.typ)
			}
			e := m.Error
			if m.Type == proto.TypeChunk {
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
	for _, want := range []proto.State{proto.StateLoading, proto.StateWarming, proto.StateReady} {
		if m := next(); m.Type != proto.TypeStatus || m.Status.State != want {
			t.Fatalf("got %+v, want status %s", m, want)
		}
	}
	write(`{"op":"load","load":{"model_path":"again"}}`)
	if m := next(); m.Type != proto.TypeError || m.Error.Class != fault.ClassConflict {
		t.Fatalf("second load: %+v, want a conflict error", m)
	}
	write(`{"op":"shutdown"}`)
	if m := next(); m.Type != proto.TypeStatus || m.Status.State != proto.StateStopped {
		t.Fatalf("got %+v, want status stopped", m)
	}
	p.Stdin().Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if e, err := p.Wait(ctx); err != nil || !e.Success() {
		t.Fatalf("runner exit: %s, %v", e, err)
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
	m, err := proto.DecodeMessage(lines[len(lines)-1])
	if err != nil || m.Type != proto.TypeStatus || m.Status.State != proto.StateStopped {
		t.Fatalf("output %q: %+v, %v", out.String(), m, err)
	}
	if first, err := proto.DecodeMessage(lines[0]); err != nil || first.Type != proto.TypeProgress {
		t.Fatalf("output %q: the first line is not a heartbeat", out.String())
	}
}
