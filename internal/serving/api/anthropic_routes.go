package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/anthropic"
	"github.com/skulk/skulk/internal/serving/request"
)

// anthropicPingInterval is how long a stream may stay silent before it gets
// a ping event. A stream whose task has sent nothing yet (a long prompt
// evaluation) begins after this long, with message_start and a ping, so
// clients and proxies see a live connection.
const anthropicPingInterval = 10 * time.Second

// anthropicPrefix is where the Anthropic routes live; every error under it
// is answered in Anthropic's shape.
const anthropicPrefix = "/v1/messages"

// anthropicRoutes registers the routes of Anthropic Messages: POST
// /v1/messages, POST /v1/messages/count_tokens, and answers in Anthropic's
// error shape for other methods and paths under /v1/messages.
func (s *server) anthropicRoutes() {
	s.mux.HandleFunc("POST /v1/messages", s.messages)
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.countTokens)
	s.mux.HandleFunc("/v1/messages", s.anthropicMethodNotAllowed)
	s.mux.HandleFunc("/v1/messages/count_tokens", s.anthropicMethodNotAllowed)
	s.mux.HandleFunc("/v1/messages/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fault.Errorf(fault.ClassNotFound, "no route for %s %s; this server serves POST /v1/messages and POST /v1/messages/count_tokens", fault.Clip(r.Method), fault.Clip(r.URL.Path)))
	})
}

// isAnthropicPath reports whether errors on path are answered in
// Anthropic's shape.
func isAnthropicPath(path string) bool {
	return path == anthropicPrefix || strings.HasPrefix(path, anthropicPrefix+"/")
}

func (s *server) anthropicMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", http.MethodPost)
	s.writeStatus(w, r, http.StatusMethodNotAllowed, fault.Errorf(fault.ClassInvalid, "method %s is not allowed on %s; allowed: POST", fault.Clip(r.Method), fault.Clip(r.URL.Path)))
}

// messages serves POST /v1/messages.
func (s *server) messages(w http.ResponseWriter, r *http.Request) {
	d, ok := decodeBody(s, w, r, anthropic.DecodeMessagesRequest)
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
	meta := anthropic.Meta{ID: "msg_" + s.cfg.NewID(), Model: d.Request.Model}
	if d.Stream {
		s.streamMessage(ctx, w, r, chunks, anthropic.NewStream(meta), anthropicPingInterval)
		return
	}
	answerWhole(ctx, s, w, r, chunks, anthropic.NewAccumulator(meta))
}

// countTokens serves POST /v1/messages/count_tokens: the request runs as a
// CountOnly task, whose done chunk counts the rendered prompt.
func (s *server) countTokens(w http.ResponseWriter, r *http.Request) {
	req, ok := decodeBody(s, w, r, anthropic.DecodeCountTokensRequest)
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	chunks, err := s.generate(ctx, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var last request.Chunk // the done chunk, once the task has ended
	if err, ok := collect(ctx, chunks, func(c request.Chunk) { last = c }); !ok {
		return
	} else if err != nil {
		s.writeError(w, r, err)
		return
	}
	if last.Usage == nil {
		s.writeError(w, r, fault.Errorf(fault.ClassInternal, "the count task ended without a usage count"))
		return
	}
	s.writeJSON(w, http.StatusOK, anthropic.TokenCount{InputTokens: last.Usage.PromptTokens})
}

// streamMessage sends a task's chunks as Anthropic's server-sent events.
// Nothing is written until the first chunk arrives or the first ping
// interval passes, so a task that fails at once is answered with an
// ordinary error response; an error after that is sent as an error event,
// which ends the stream. A ping goes out whenever an interval passes with
// nothing sent.
func (s *server) streamMessage(ctx context.Context, w http.ResponseWriter, r *http.Request, chunks <-chan request.Chunk, enc *anthropic.Stream, ping time.Duration) {
	rc := http.NewResponseController(w)
	ticker := time.NewTicker(ping)
	defer ticker.Stop()
	started := false // the response header is written
	quiet := true    // nothing was sent since the last tick
	send := func(events []anthropic.Event) bool {
		if len(events) == 0 {
			return true
		}
		if !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no")
			w.WriteHeader(http.StatusOK)
		}
		for _, ev := range events {
			if err := sendNamedEvent(rc, w, ev.Name, ev.Data); err != nil {
				return false // the client left; returning cancels the task
			}
		}
		quiet = false
		return true
	}
	for {
		var c request.Chunk
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			events := enc.Start(nil)
			if events == nil && quiet {
				events = []anthropic.Event{anthropic.PingEvent()}
			}
			if !send(events) {
				return
			}
			quiet = true
			continue
		case got, ok := <-chunks:
			if !ok {
				got = request.Chunk{Kind: request.ChunkError, Error: fault.Errorf(fault.ClassInternal, "the task ended without a final chunk")}
			}
			c = got
		}
		if c.Kind == request.ChunkError {
			e := chunkError(c)
			if !started {
				s.writeError(w, r, e)
				return
			}
			status, _ := s.classify(r, e)
			s.log.Warn("http stream error", "method", r.Method, "path", r.URL.Path, "class", e.Class, "message", e.Message)
			_ = sendNamedEvent(rc, w, anthropic.EventError, anthropic.ErrorFrom(status, e))
			return
		}
		if !send(enc.Encode(c)) {
			return
		}
		if c.Kind == request.ChunkDone {
			return
		}
	}
}

// sendNamedEvent writes v as one SSE event with an event name and flushes
// it.
func sendNamedEvent(rc *http.ResponseController, w http.ResponseWriter, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(b)+len(name)+16)
	buf = append(buf, "event: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	return rc.Flush()
}
