package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRetryWait: a streamed chat answered 503 with Retry-After twice, then
// served, is retried and says once why it waits; a 503 without
// Retry-After, or any other error, is not retried.
func TestRetryWait(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"node n1 was lost; its instance is being placed again","code":"instance_lost"}}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
	}))
	t.Cleanup(srv.Close)
	c := newAPIClient(srv.URL)
	var said bytes.Buffer
	wait := newRetryWait(&said, time.Now())
	var got string
	for {
		_, err := c.streamChat(context.Background(), map[string]any{"model": "m"}, func(content, _ string) { got += content })
		if !wait.again(context.Background(), err) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if got != "hi" || calls.Load() != 3 {
		t.Fatalf("got %q after %d calls", got, calls.Load())
	}
	if n := strings.Count(said.String(), "waiting: node n1 was lost"); n != 1 {
		t.Fatalf("said %q, want the reason once", said.String())
	}
	for _, err := range []error{&apiError{Status: 503, Message: "x"}, &apiError{Status: 500, Message: "x", RetryAfter: "1"}, context.Canceled} {
		if newRetryWait(&said, time.Now()).again(context.Background(), err) {
			t.Errorf("%v was retried", err)
		}
	}
}
