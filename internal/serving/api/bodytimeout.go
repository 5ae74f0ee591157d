package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// bodyDeadline bounds how long a request's body may take to arrive: a
// client that trickles it (a byte a second) would otherwise hold a
// connection and a handler for as long as it likes. The deadline is the
// connection's read deadline, set when the request starts and cleared when
// the body has been read to its end; net/http's Server.ReadTimeout is no
// substitute, since it stays armed after the body and cancels the request
// (through the connection's background read) in the middle of a long
// stream. A body that misses the deadline fails to read with a
// *bodyTimeoutError, which readBody answers as a 408.
func (s *server) bodyDeadline(next http.Handler) http.Handler {
	if s.cfg.BodyTimeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		deadline := time.Now().Add(s.cfg.BodyTimeout)
		if err := rc.SetReadDeadline(deadline); err != nil {
			// A writer without deadlines (not a net/http connection) has
			// no slow client behind it to bound.
			next.ServeHTTP(w, r)
			return
		}
		// An upload may take far longer than the limit: its body must only
		// keep moving, so each read that brings bytes moves the deadline on.
		renew := r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/models/upload/")
		r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, deadline: deadline, limit: s.cfg.BodyTimeout, renew: renew}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the connection's read deadline once the body is read
// to its end, so what follows (a stream that outlasts the deadline, the
// next request on the connection) is not bound by it, and words a read
// that hit the deadline as a *bodyTimeoutError.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	deadline time.Time
	limit    time.Duration
	renew    bool // each read with bytes moves the deadline limit on
	done     bool // the deadline is cleared, or has fired
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil && b.renew && n > 0 && !b.done:
		// Moved at most once a step (a second, or half a shorter limit):
		// a deadline is not set on every read of a fast body.
		if now := time.Now(); b.deadline.Sub(now) < b.limit-min(time.Second, b.limit/2) {
			b.deadline = now.Add(b.limit)
			_ = b.rc.SetReadDeadline(b.deadline)
		}
	case err == nil || b.done:
	case errors.Is(err, io.EOF):
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{}) // fails only once the connection is gone
	case errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(b.deadline):
		b.done = true
		err = &bodyTimeoutError{limit: b.limit, err: err}
	}
	return n, err
}

// bodyTimeoutError is a body that did not arrive within limit.
type bodyTimeoutError struct {
	limit time.Duration
	err   error
}

func (e *bodyTimeoutError) Error() string {
	return "the request body did not arrive within " + e.limit.String() + ": " + e.err.Error()
}

func (e *bodyTimeoutError) Unwrap() error { return e.err }
