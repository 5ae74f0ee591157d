package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/infer"
)

// statusWriter records the status a handler wrote, for the request log and
// for panic recovery. Unwrap lets http.ResponseController reach the
// underlying writer (Flush for SSE).
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until the header is written
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs one line per request: method, path, status and duration.
// It never logs bodies, query strings or headers, so a key cannot leak.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.cfg.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			status := sw.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http sends 200
			}
			s.log.Info("http request", "method", r.Method, "path", r.URL.Path, "status", status,
				"duration", s.cfg.Now().Sub(start).Round(time.Microsecond))
		}()
		next.ServeHTTP(sw, r)
	})
}

// recoverPanics turns a handler panic into a 500 error document and logs it
// with its stack. When the response had already begun (a stream), the
// connection is aborted instead, which the client sees as a cut stream.
func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("http handler panic", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if sw, ok := w.(*statusWriter); ok && sw.status != 0 {
				panic(http.ErrAbortHandler)
			}
			s.writeStatus(w, r, http.StatusInternalServerError, infer.Errorf(infer.ClassInternal, "internal error; the node's log has the details"))
		}()
		next.ServeHTTP(w, r)
	})
}

// authenticate requires the key on every route when one is configured, as
// "Authorization: Bearer <key>" or, as Anthropic's clients send it, as
// "x-api-key: <key>"; either header carrying the key admits the request.
// Keys are compared as SHA-256 digests in constant time, so neither their
// content nor their length leaks through timing. Failures under
// /v1/messages are answered in Anthropic's shape.
func (s *server) authenticate(next http.Handler) http.Handler {
	if s.cfg.APIKey == "" {
		return next
	}
	want := sha256.Sum256([]byte(s.cfg.APIKey))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, hasBearer := bearer(r.Header.Get("Authorization"))
		xKey := strings.TrimSpace(r.Header.Get("X-Api-Key"))
		hasXKey := xKey != ""
		if hasBearer && keyMatches(key, want) || hasXKey && keyMatches(xKey, want) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="skulk"`)
		if !hasBearer && !hasXKey {
			s.writeError(w, r, infer.Errorf(infer.ClassAuth, "this node requires an API key: send the header \"Authorization: Bearer <key>\" or \"x-api-key: <key>\""))
			return
		}
		s.writeError(w, r, infer.Errorf(infer.ClassAuth, "the API key is not valid"))
	})
}

// keyMatches compares key's SHA-256 digest with want in constant time.
func keyMatches(key string, want [sha256.Size]byte) bool {
	got := sha256.Sum256([]byte(key))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// bearer returns the credential of an Authorization header of the Bearer
// scheme (matched case-insensitively).
func bearer(h string) (string, bool) {
	scheme, cred, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

// route serves the request through the mux, answering unknown routes (404)
// and wrong methods (405, with Allow) with JSON error documents instead of
// the mux's plain text.
func (s *server) route(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	c := &captureWriter{header: http.Header{}}
	h.ServeHTTP(c, r)
	switch c.status {
	case http.StatusNotFound:
		s.writeStatus(w, r, http.StatusNotFound, infer.Errorf(infer.ClassNotFound, "no route for %s %s", infer.Clip(r.Method), infer.Clip(r.URL.Path)))
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", c.header.Get("Allow"))
		s.writeStatus(w, r, http.StatusMethodNotAllowed, infer.Errorf(infer.ClassInvalid, "method %s is not allowed on %s; allowed: %s", infer.Clip(r.Method), infer.Clip(r.URL.Path), c.header.Get("Allow")))
	default: // the mux's redirect to a clean path
		for k, v := range c.header {
			w.Header()[k] = v
		}
		w.WriteHeader(c.status)
	}
}

// captureWriter records what the mux's own 404, 405 and redirect handlers
// write, so route can answer in JSON.
type captureWriter struct {
	header http.Header
	status int
}

func (c *captureWriter) Header() http.Header { return c.header }
func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}
func (c *captureWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return len(b), nil
}
