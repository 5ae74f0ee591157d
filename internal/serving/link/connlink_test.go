package link

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/serving/pipeline"
)

// connDuplex joins the sending and receiving ConnLink of one edge.
type connDuplex struct{ tx, rx *ConnLink }

func (d connDuplex) Send(ctx context.Context, b []byte) error { return d.tx.Send(ctx, b) }
func (d connDuplex) Recv(ctx context.Context) ([]byte, error) { return d.rx.Recv(ctx) }
func (d connDuplex) Close() error                             { return errors.Join(d.tx.Close(), d.rx.Close()) }

// TestConnLinkPipeline: two and three stages over framed Unix sockets give
// the whole model's greedy tokens.
func TestConnLinkPipeline(t *testing.T) {
	const greedyTokens = 64
	path, f, cfg, prompts := storiesModel(t)
	tok, err := engine.OpenTokenizer(path)
	if err != nil {
		t.Fatal(err)
	}
	max := pipeline.MaxObjectBytes(cfg, 3, 0)
	for _, stages := range []int{2, 3} {
		p, err := pipeline.New(f, pipeline.Split(cfg.NLayer, stages), pipeline.Options{Threads: 1,
			Head: pipeline.HeadConfig{ChunkSize: 3, EndOfGeneration: tok.IsEOG},
			NewLink: func(edge, ranks int) (pipeline.Link, error) {
				a, b := unixPair(t)
				return connDuplex{NewConnLink(a, max), NewConnLink(b, max)}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		for _, pr := range prompts {
			want := reference(t, path, pr, greedyTokens)
			got := generate(t, p, pipeline.Request{Prompt: pr, MaxTokens: greedyTokens})
			equalTokens(t, "prompt", got, want)
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
	if _, err := rx2.Recv(ctx); !errors.Is(err, pipeline.ErrLinkClosed) {
		t.Fatalf("recv from a closed link: %v", err)
	}
	// A frame over the limit is a protocol fault.
	a3, b3 := unixPair(t)
	a3.Write([]byte{100, 0, 0, 0})
	var pe *pipeline.ProtocolError
	if _, err := NewConnLink(b3, 8).Recv(ctx); !errors.As(err, &pe) {
		t.Fatalf("oversized frame: %v", err)
	}
}
