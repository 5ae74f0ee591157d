package api

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/skulk/skulk/internal/observe/trace"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/access"
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
	// note, when set, times the writes of a traced request.
	note *requestNote
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
	if n := w.note; n != nil && n.rec != nil {
		n.writing(time.Now())
		k, err := w.ResponseWriter.Write(b)
		n.lastWrite = time.Now()
		return k, err
	}
	return w.ResponseWriter.Write(b)
}

// FlushError flushes the underlying writer (http.ResponseController finds
// it here), timing the flush of a traced request as part of its writes.
func (w *statusWriter) FlushError() error {
	var err error
	switch f := w.ResponseWriter.(type) {
	case interface{ FlushError() error }:
		err = f.FlushError()
	case http.Flusher:
		f.Flush()
	default:
		return http.ErrNotSupported
	}
	if n := w.note; n != nil && n.rec != nil {
		n.lastWrite = time.Now()
	}
	return err
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
		id := trace.NewID()
		w.Header()[trace.IDHeader] = []string{id}
		sw := &statusWriter{ResponseWriter: w}
		var note *requestNote
		if s.cfg.Observe != nil || s.cfg.Traces != nil {
			note = &requestNote{id: id}
			sw.note = note
			r = r.WithContext(trace.WithCarrier(r.Context(), note))
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
			if note == nil {
				return
			}
			_, route := s.mux.Handler(r)
			if s.cfg.Observe != nil {
				s.cfg.Observe(Served{Route: route, Model: note.model, Status: status, Duration: d})
			}
			if note.rec != nil && s.cfg.Traces != nil {
				s.storeTrace(note, sw, route, status, start, start.Add(d))
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// requestNote is what a request's handler learns for its observation (the
// model) and its trace: the id the API returned and, once the gateway
// finds the cluster's tracing on, the request's recorder, with the times
// of the API's own steps. It is the request's trace.Carrier. The handler
// writes it and logRequests reads it, on the request's goroutine (the
// gateway attaches the recorder from the handler's call).
type requestNote struct {
	model string
	id    string
	rec   *trace.Recorder
	// decodeStart and decodeEnd bound the body's read and decode.
	decodeStart, decodeEnd time.Time
	// firstWrite and lastWrite bound the answer's writes (and flushes),
	// timed only once rec is set.
	firstWrite, lastWrite time.Time
	writes                int
}

func (n *requestNote) TraceID() string          { return n.id }
func (n *requestNote) Attach(r *trace.Recorder) { n.rec = r }

func (n *requestNote) writing(at time.Time) {
	if n.writes == 0 {
		n.firstWrite = at
	}
	n.writes++
}

// noteFrom returns the request's note, or nil.
func noteFrom(ctx context.Context) *requestNote {
	n, _ := trace.CarrierFrom(ctx).(*requestNote)
	return n
}

// noteModel notes the model a request named, for Config.Observe.
func noteModel(ctx context.Context, model string) {
	if n := noteFrom(ctx); n != nil {
		n.model = model
	}
}

// storeTrace adds the API's spans to a traced request's recorder and keeps
// the trace: api (the whole request, the trace's root), api.decode (the
// body's read and decode) and stream.write (the answer's writes, from the
// first to the end of the last flush; write for an answer not streamed).
func (s *server) storeTrace(n *requestNote, sw *statusWriter, route string, status int, start, end time.Time) {
	rec := n.rec
	root := rec.Root()
	rec.Add("api", root, 0, start, end, trace.Attr{Key: "route", Value: route}, trace.Attr{Key: "status", Value: strconv.Itoa(status)})
	if !n.decodeEnd.IsZero() {
		rec.Add("api.decode", 0, root, n.decodeStart, n.decodeEnd)
	}
	if n.writes > 0 {
		name := "write"
		switch ct := sw.Header().Get("Content-Type"); {
		case strings.HasPrefix(ct, "text/event-stream"), strings.HasPrefix(ct, "application/x-ndjson"):
			name = "stream.write"
		}
		rec.Add(name, 0, root, n.firstWrite, n.lastWrite, trace.Attr{Key: "writes", Value: strconv.Itoa(n.writes)})
	}
	s.cfg.Traces.Put(rec.ID(), rec.Spans())
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
			s.writeStatus(w, r, http.StatusInternalServerError, fault.Errorf(fault.ClassInternal, "internal error; the node's log has the details"))
		}()
		next.ServeHTTP(w, r)
	})
}

// authenticate applies the access policy before any route runs: with keys
// set anywhere in the cluster every request needs one ("Authorization:
// Bearer KEY" or, as Anthropic's clients send it, "x-api-key: KEY"), and the
// admin routes need the admin key; with none, loopback clients are served
// and others only when the operator opened the API. GET /metrics needs none
// when Config.MetricsPublic is set. First, every request's connection is
// counted under the key it presented (Config.ClientConn), so that clients
// behind one proxy address are told apart. Refusals are written in the
// wire format of the route asked for.
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, adminPattern := s.adminMux.Handler(r)
		bearerKey, _ := bearer(r.Header.Get("Authorization"))
		req := access.Request{
			Loopback:    isLoopback(r.RemoteAddr),
			Credentials: []string{bearerKey, strings.TrimSpace(r.Header.Get("X-Api-Key"))},
			Admin:       adminPattern != "",
			Route:       adminPattern,
		}
		// The key is looked up on public routes too: their connections
		// count under it as well.
		key, denied := s.cfg.Access().DecideKey(req)
		if !s.claimConn(w, r, key.Digest, key.Name) {
			return
		}
		if _, public := s.publicMux.Handler(r); public != "" {
			next.ServeHTTP(w, r)
			return
		}
		if denied != nil {
			class := fault.ClassForbidden
			if denied.Status == http.StatusUnauthorized {
				class = fault.ClassAuth
				w.Header().Set("WWW-Authenticate", `Bearer realm="skulk"`)
			}
			s.writeError(w, r, fault.Errorf(class, "%s", denied.Reason))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// claimConn tells Config.ClientConn who sent r, and answers r when it
// refuses: false means r is answered and its connection is to close.
func (s *server) claimConn(w http.ResponseWriter, r *http.Request, digest, name string) bool {
	if s.cfg.ClientConn == nil {
		return true
	}
	err := s.cfg.ClientConn(r.Context(), digest, name)
	if err == nil {
		return true
	}
	status := http.StatusTooManyRequests
	if st, ok := err.(interface{ HTTPStatus() int }); ok {
		status = st.HTTPStatus()
	}
	w.Header().Set("Connection", "close")
	s.writeStatus(w, r, status, &fault.Error{Class: fault.ClassUnavailable, Code: "too_many_connections", Message: err.Error()})
	return false
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
		s.writeStatus(w, r, http.StatusNotFound, fault.Errorf(fault.ClassNotFound, "no route for %s %s", fault.Clip(r.Method), fault.Clip(r.URL.Path)))
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", c.header.Get("Allow"))
		s.writeStatus(w, r, http.StatusMethodNotAllowed, fault.Errorf(fault.ClassInvalid, "method %s is not allowed on %s; allowed: %s", fault.Clip(r.Method), fault.Clip(r.URL.Path), c.header.Get("Allow")))
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
