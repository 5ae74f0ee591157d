package api

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/access"
	"github.com/skulk/skulk/internal/infer"
)

// statusWriter records the status a handler wrote, for the request log and
// for panic recovery. Unwrap lets http.ResponseController reach the
// underlying writer (Flush for SSE).
type statusWriter struct {
	http.ResponseWriter
	status int // 0 until the header is written
	// warn, when set, is asked for the WarningHeader just before the
	// header goes out: after the handler's work, so a change it caused
	// (the write that filled the disk) is in it.
	warn func() string
}

// WarningHeader carries, on the answers to requests that change the
// cluster (POST, PUT, PATCH, DELETE), what makes the change less durable
// than it looks: "persistence degraded: ..." while a node's event log or
// response journal does not write, or its log lost history.
const WarningHeader = "X-Skulk-Warning"

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.warnNow()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.warnNow()
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) warnNow() {
	if w.warn == nil {
		return
	}
	if msg := w.warn(); msg != "" {
		w.Header().Set(WarningHeader, msg)
	}
}

// mutates reports whether a request of this method changes something.
func mutates(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logRequests logs one line per request: method, path, status and duration.
// It never logs bodies, query strings or headers, so a key cannot leak. It
// also hands the request's outcome to Config.Observe: the route's pattern
// (never the raw path), the model it named, the status and the duration.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.cfg.Now()
		sw := &statusWriter{ResponseWriter: w}
		var note *requestNote
		if s.cfg.Observe != nil {
			note = &requestNote{}
			r = r.WithContext(context.WithValue(r.Context(), noteKey{}, note))
		}
		if s.cfg.Warning != nil && mutates(r.Method) {
			sw.warn = s.cfg.Warning
		}
		defer func() {
			status := sw.status
			if status == 0 {
				status = http.StatusOK // nothing written: net/http sends 200
			}
			d := s.cfg.Now().Sub(start)
			s.log.Info("http request", "method", r.Method, "path", r.URL.Path, "status", status, "duration", d.Round(time.Microsecond))
			if note != nil {
				_, route := s.mux.Handler(r)
				s.cfg.Observe(Served{Route: route, Model: note.model, Status: status, Duration: d})
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// requestNote is what a request's handler learns for its observation (the
// model); the handler writes it and logRequests reads it, on the request's
// goroutine.
type requestNote struct{ model string }

type noteKey struct{}

// noteModel notes the model a request named, for Config.Observe.
func noteModel(ctx context.Context, model string) {
	if n, ok := ctx.Value(noteKey{}).(*requestNote); ok {
		n.model = model
	}
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

// authenticate applies the access policy before any route runs: with keys
// set anywhere in the cluster every request needs one ("Authorization:
// Bearer KEY" or, as Anthropic's clients send it, "x-api-key: KEY"), and the
// admin routes need the admin key; with none, loopback clients are served
// and others only when the operator opened the API. GET /metrics needs none
// when Config.MetricsPublic is set. Refusals are written in the wire format
// of the route asked for.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, public := s.publicMux.Handler(r); public != "" {
			next.ServeHTTP(w, r)
			return
		}
		_, adminPattern := s.adminMux.Handler(r)
		bearerKey, _ := bearer(r.Header.Get("Authorization"))
		req := access.Request{
			Loopback:    isLoopback(r.RemoteAddr),
			Credentials: []string{bearerKey, strings.TrimSpace(r.Header.Get("X-Api-Key"))},
			Admin:       adminPattern != "",
			Route:       adminPattern,
		}
		if _, denied := s.cfg.Access().Decide(req); denied != nil {
			class := infer.ClassForbidden
			if denied.Status == http.StatusUnauthorized {
				class = infer.ClassAuth
				w.Header().Set("WWW-Authenticate", `Bearer realm="skulk"`)
			}
			s.writeError(w, r, infer.Errorf(class, "%s", denied.Reason))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopback reports whether a request's remote address is a loopback one.
func isLoopback(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().Unmap().IsLoopback()
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
