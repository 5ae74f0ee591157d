package pipeline

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/engine/model"
	"github.com/skulk/skulk/internal/engine/sample"
)

// maxObject is the object bound of a model's links.
func maxObject(t testing.TB, path string, chunk int) uint64 {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := model.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return MaxObjectBytes(cfg, chunk, 0)
}

// unixPair returns both ends of a fresh Unix-domain stream connection.
func unixPair(t testing.TB) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err = net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b = <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	return a, b
}

// connDuplex joins the sending and receiving ConnLink of one edge.
type connDuplex struct{ tx, rx *ConnLink }

func (d connDuplex) Send(ctx context.Context, b []byte) error { return d.tx.Send(ctx, b) }
func (d connDuplex) Recv(ctx context.Context) ([]byte, error) { return d.rx.Recv(ctx) }
func (d connDuplex) Close() error                             { return errors.Join(d.tx.Close(), d.rx.Close()) }

// TestConnLinkPipeline: two and three stages over framed Unix sockets give
// the whole model's greedy tokens.
func TestConnLinkPipeline(t *testing.T) {
	path := testFile(t, "models/stories260K.gguf")
	max := maxObject(t, path, 3)
	prompts := storiesPrompts(t)
	for _, stages := range []int{2, 3} {
		p := testPipeline(t, path, stages, Options{Head: HeadConfig{ChunkSize: 3}, NewLink: func(edge, ranks int) (Link, error) {
			a, b := unixPair(t)
			return connDuplex{NewConnLink(a, max), NewConnLink(b, max)}, nil
		}})
		for i, pr := range prompts {
			want := reference(t, path, pr, greedyTokens, sample.Params{})
			got := generate(t, p, []Request{{Prompt: pr, MaxTokens: greedyTokens}})
			equalTokens(t, "prompt", got[0], want)
			_ = i
		}
	}
}

func TestConnLinkFrames(t *testing.T) {
	a, b := unixPair(t)
	tx, rx := NewConnLink(a, 8), NewConnLink(b, 8)
	ctx := t.Context()
	if err := tx.Send(ctx, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if got, err := rx.Recv(ctx); err != nil || string(got) != "hello" {
		t.Fatalf("%q %v", got, err)
	}
	if err := tx.Send(ctx, make([]byte, 9)); err == nil {
		t.Fatal("an object over the limit was sent")
	}
	// A Recv waits for its context.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := rx.Recv(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("recv after its context: %v", err)
	}
	// The far end closing is ErrLinkClosed.
	a2, b2 := unixPair(t)
	tx2, rx2 := NewConnLink(a2, 8), NewConnLink(b2, 8)
	tx2.Close()
	if _, err := rx2.Recv(ctx); !errors.Is(err, ErrLinkClosed) {
		t.Fatalf("recv from a closed link: %v", err)
	}
	// A frame over the limit is a protocol fault.
	a3, b3 := unixPair(t)
	a3.Write([]byte{100, 0, 0, 0})
	var pe *ProtocolError
	if _, err := NewConnLink(b3, 8).Recv(ctx); !errors.As(err, &pe) {
		t.Fatalf("oversized frame: %v", err)
	}
}
