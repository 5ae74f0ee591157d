package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/openai"
	"github.com/skulk/skulk/internal/serving/request"
)

// encoder turns a task's chunks into the wire objects of a streamed answer.
type encoder[T any] interface {
	Encode(request.Chunk) []T
}

// accumulator folds a task's chunks into one whole answer.
type accumulator[T any] interface {
	Add(request.Chunk)
	Result() T
}

// textFormat is one generation endpoint of a wire format: how to decode its
// request and how to encode its answers.
type textFormat[S, R any] struct {
	idPrefix       string
	decode         func([]byte) (openai.Decoded, error)
	newStream      func(openai.Meta, bool) encoder[S]
	newAccumulator func(openai.Meta) accumulator[R]
}

// chatFormat is POST /v1/chat/completions.
func chatFormat() textFormat[openai.ChatCompletionChunk, openai.ChatCompletion] {
	return textFormat[openai.ChatCompletionChunk, openai.ChatCompletion]{
		idPrefix: "chatcmpl-",
		decode:   openai.DecodeChatRequest,
		newStream: func(m openai.Meta, usage bool) encoder[openai.ChatCompletionChunk] {
			return openai.NewChatStream(m, usage)
		},
		newAccumulator: func(m openai.Meta) accumulator[openai.ChatCompletion] {
			return openai.NewChatAccumulator(m)
		},
	}
}

// completionFormat is POST /v1/completions.
func completionFormat() textFormat[openai.TextCompletion, openai.TextCompletion] {
	return textFormat[openai.TextCompletion, openai.TextCompletion]{
		idPrefix: "cmpl-",
		decode:   openai.DecodeCompletionRequest,
		newStream: func(m openai.Meta, usage bool) encoder[openai.TextCompletion] {
			return openai.NewCompletionStream(m, usage)
		},
		newAccumulator: func(m openai.Meta) accumulator[openai.TextCompletion] {
			return openai.NewCompletionAccumulator(m)
		},
	}
}

func (s *server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	serveText(s, w, r, chatFormat())
}

func (s *server) completions(w http.ResponseWriter, r *http.Request) {
	serveText(s, w, r, completionFormat())
}

// serveText decodes a generation request, starts the task and answers with
// its stream or its aggregate.
func serveText[S, R any](s *server, w http.ResponseWriter, r *http.Request, f textFormat[S, R]) {
	d, ok := decodeBody(s, w, r, f.decode)
	if !ok {
		return
	}
	// The task lives exactly as long as this handler: returning (the answer
	// is done, a write failed, the client left) cancels it.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	chunks, err := s.generate(ctx, d.Request)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	meta := openai.Meta{ID: f.idPrefix + s.cfg.NewID(), Model: d.Request.Model, Created: s.cfg.Now().Unix()}
	if d.Stream {
		streamText(ctx, s, w, r, chunks, f.newStream(meta, d.IncludeUsage))
		return
	}
	answerWhole(ctx, s, w, r, chunks, f.newAccumulator(meta))
}

// answerWhole answers with acc's aggregate of a task's chunks, or with the
// error the task ended with.
func answerWhole[R any](ctx context.Context, s *server, w http.ResponseWriter, r *http.Request, chunks <-chan request.Chunk, acc accumulator[R]) {
	if err, ok := collect(ctx, chunks, acc.Add); !ok {
		return // the client left; nobody reads an answer
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, acc.Result())
}

// collect reads a task's chunks to the end for a whole (not streamed)
// answer: add gets every chunk up to and including the done one. It
// returns the error a failed task ended with, or nil after the done chunk,
// and false when ctx ended first (the client left).
func collect(ctx context.Context, chunks <-chan request.Chunk, add func(request.Chunk)) (*fault.Error, bool) {
	for {
		c, ok := next(ctx, chunks)
		if !ok {
			return nil, false
		}
		if c.Kind == request.ChunkError {
			return chunkError(c), true
		}
		add(c)
		if c.Kind == request.ChunkDone {
			return nil, true
		}
	}
}

// next returns the next chunk, or false when ctx is done. A channel closed
// without a final chunk yields an error chunk: a task must end with done or
// error, and a silent end is a failure, not a success.
func next(ctx context.Context, chunks <-chan request.Chunk) (request.Chunk, bool) {
	select {
	case <-ctx.Done():
		return request.Chunk{}, false
	case c, ok := <-chunks:
		if !ok {
			return request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "the task ended without a final chunk")}, true
		}
		return c, true
	}
}

// chunkError is the error an error chunk carries, its message bounded as
// writeStatus bounds it (a stream's last event is written without it).
func chunkError(c request.Chunk) *fault.Error {
	if c.Error == nil {
		return fault.Errorf(fault.ClassInternal, "the task failed without a reason")
	}
	return c.Error.Bounded()
}

// streamText sends a task's chunks as server-sent events. Nothing is written
// until the first chunk arrives, so a task that fails at once is answered
// with an ordinary error response; an error after that is sent as a last
// event carrying the error document, without [DONE].
func streamText[S any](ctx context.Context, s *server, w http.ResponseWriter, r *http.Request, chunks <-chan request.Chunk, enc encoder[S]) {
	rc := http.NewResponseController(w)
	started := false
	for {
		c, ok := next(ctx, chunks)
		if !ok {
			return
		}
		if c.Kind == request.ChunkError {
			if !started {
				s.writeError(w, r, chunkError(c))
				return
			}
			e := chunkError(c)
			s.log.Warn("http stream error", "method", r.Method, "path", r.URL.Path, "class", e.Class, "message", e.Message)
			_ = sendEvent(rc, w, openai.ErrorFrom(e))
			return
		}
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
		for _, obj := range enc.Encode(c) {
			if err := sendEvent(rc, w, obj); err != nil {
				return // the client left; returning cancels the task
			}
		}
		if c.Kind == request.ChunkDone {
			_ = sendData(rc, w, []byte("[DONE]"))
			return
		}
	}
}

// sendEvent writes v as one SSE data event and flushes it.
func sendEvent(rc *http.ResponseController, w http.ResponseWriter, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return sendData(rc, w, b)
}

func sendData(rc *http.ResponseController, w http.ResponseWriter, data []byte) error {
	buf := make([]byte, 0, len(data)+8)
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return rc.Flush()
}
