package request

import "context"

// Tap hears a task's chunks where its stream is produced, so that the node
// that owns the request observes them (metrics, its count of requests in
// flight) without a goroutine of its own between the producer and the
// reader: one hand-off fewer per chunk. Chunk hears each chunk before it
// is passed on; End hears once that the producer is done (its last chunk
// passed on, or its reader gone). Both are called from the producer's
// goroutine, one task's calls never concurrently, and must return at once.
// Either may be nil.
type Tap struct {
	Chunk func(*Chunk)
	End   func()
}

// Observe passes c to the Tap's Chunk, if any.
func (t Tap) Observe(c *Chunk) {
	if t.Chunk != nil {
		t.Chunk(c)
	}
}

// Done calls the Tap's End, if any.
func (t Tap) Done() {
	if t.End != nil {
		t.End()
	}
}

type tapKey struct{}

// WithTap returns ctx carrying t to the producer of a task's stream (the
// worker's Serve in process, gateway.Remote's reader for another node),
// as the trace scope travels.
func WithTap(ctx context.Context, t Tap) context.Context {
	return context.WithValue(ctx, tapKey{}, t)
}

// TapFrom returns the Tap ctx carries: the zero Tap, which hears nothing,
// when none.
func TapFrom(ctx context.Context) Tap {
	t, _ := ctx.Value(tapKey{}).(Tap)
	return t
}
