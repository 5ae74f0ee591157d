package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/api/anthropic"
	"github.com/skulk/skulk/internal/serving/api/ollama"
	"github.com/skulk/skulk/internal/serving/api/openai"
)

// statusError is an error that names its own HTTP status, like the
// placement planner's refusals.
type statusError interface {
	error
	HTTPStatus() int
}

// classify is the one place where an error becomes a status and a
// client-facing error. Errors without a class are internal: the client gets
// a generic message and the log gets the cause.
func (s *server) classify(r *http.Request, err error) (int, *fault.Error) {
	if e, ok := errors.AsType[*fault.Error](err); ok {
		return e.Class.HTTPStatus(), e
	}
	if se, ok := errors.AsType[statusError](err); ok {
		status := se.HTTPStatus()
		return status, &fault.Error{Class: fault.ClassOfStatus(status), Message: se.Error()}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return fault.ClassCancelled.HTTPStatus(), fault.Errorf(fault.ClassCancelled, "the request was cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return fault.ClassUnavailable.HTTPStatus(), fault.Errorf(fault.ClassUnavailable, "the request timed out")
	}
	s.log.Error("http internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	return http.StatusInternalServerError, fault.Errorf(fault.ClassInternal, "internal error; the node's log has the details")
}

// writeError answers err as an error document with its status.
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, e := s.classify(r, err)
	e = e.Bounded()
	if status >= 500 && status != http.StatusNotImplemented { // 501: a client asked for what Skulk does not do
		s.log.Warn("http error", "method", r.Method, "path", r.URL.Path, "status", status, "class", e.Class, "message", e.Message)
	}
	s.writeStatus(w, r, status, e)
}

// retryAfterSeconds is the Retry-After of a 503.
const retryAfterSeconds = "1"

// writeStatus writes e with the given status in the error shape of the wire
// format the request's route speaks: Anthropic's under /v1/messages,
// Ollama's under /api/, OpenAI's everywhere else (the control routes too).
// However e was built, the client gets at most fault.MaxMessage bytes of
// its message.
func (s *server) writeStatus(w http.ResponseWriter, r *http.Request, status int, e *fault.Error) {
	e = e.Bounded()
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		// Every 503 is a "retry in a moment": a model loading, an election,
		// a node out of reach.
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	switch {
	case isAnthropicPath(r.URL.Path):
		s.writeJSON(w, status, anthropic.ErrorFrom(status, e))
	case strings.HasPrefix(r.URL.Path, "/api/"):
		s.writeJSON(w, status, ollama.ErrorFrom(e))
	default:
		s.writeJSON(w, status, openai.ErrorFrom(e))
	}
}

// writeJSON writes v as a JSON document.
func (s *server) writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		s.log.Error("http response encoding", "err", err)
		status = http.StatusInternalServerError
		body, _ = json.Marshal(openai.ErrorFrom(fault.Errorf(fault.ClassInternal, "internal error: the response could not be encoded")))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // a failed write means the client left
}

// decodeBody reads the request body and decodes it with decode; when either
// fails it writes the error in the route's wire format and reports false.
func decodeBody[T any](s *server, w http.ResponseWriter, r *http.Request, decode func([]byte) (T, error)) (T, bool) {
	n := noteFrom(r.Context())
	if n != nil {
		n.decodeStart = s.cfg.Now()
	}
	body, err := s.readBody(w, r)
	if err == nil {
		var v T
		if v, err = decode(body); err == nil {
			if n != nil {
				n.decodeEnd = s.cfg.Now()
			}
			return v, true
		}
	}
	s.writeError(w, r, err)
	var zero T
	return zero, false
}

// readBody reads a request body of at most cfg.MaxBodyBytes.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err == nil {
		return body, nil
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, fault.Errorf(fault.ClassTooLarge, "the request body is larger than the limit of %d bytes", s.cfg.MaxBodyBytes)
	}
	if te, ok := errors.AsType[*bodyTimeoutError](err); ok {
		// What is left of the body may still be on its way: the
		// connection cannot carry another request.
		w.Header().Set("Connection", "close")
		return nil, fault.Errorf(fault.ClassTimeout, "the request body did not arrive within %s; send the whole body without pauses (the node's operator sets this limit with SKULK_HTTP_BODY_TIMEOUT)", te.limit)
	}
	return nil, fault.Errorf(fault.ClassInvalid, "the request body could not be read: %v", err)
}
