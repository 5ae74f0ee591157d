package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// maxRetryWait is how long `skulk run` and chat keep retrying an answer
// that says to retry (a 503 with Retry-After: an election, an instance
// being placed again after a node was lost, a model loading).
const maxRetryWait = 30 * time.Second

// retryWait decides whether a failed request is tried again, and says why
// it waits, once per distinct reason.
type retryWait struct {
	w     io.Writer
	until time.Time
	said  string
}

func newRetryWait(w io.Writer, now time.Time) *retryWait {
	return &retryWait{w: w, until: now.Add(maxRetryWait)}
}

// again sleeps for the answer's Retry-After and reports true when err is
// such an answer and the wait has time left.
func (r *retryWait) again(ctx context.Context, err error) bool {
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.RetryAfter == "" {
		return false
	}
	secs, perr := strconv.Atoi(ae.RetryAfter)
	if perr != nil || secs < 1 {
		secs = 1
	}
	d := time.Duration(secs) * time.Second
	if time.Now().Add(d).After(r.until) {
		return false
	}
	if ae.Message != r.said {
		fmt.Fprintf(r.w, "waiting: %s (retrying for up to %v)\n", ae.Message, maxRetryWait)
		r.said = ae.Message
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
