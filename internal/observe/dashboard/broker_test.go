package dashboard

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// readEvents reads SSE messages from a stream as "event data" strings.
func readEvents(t *testing.T, sc *bufio.Scanner, n int) []string {
	t.Helper()
	var out []string
	var event string
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, event+" "+strings.TrimPrefix(line, "data: "))
		}
	}
	if len(out) < n {
		t.Fatalf("the stream ended after %v (want %d messages): %v", out, n, sc.Err())
	}
	return out
}

// broker starts a broker over frames and serves it; the test's end stops
// both.
func broker(t *testing.T, cfg BrokerConfig) (*Broker, *httptest.Server) {
	t.Helper()
	b := NewBroker(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	srv := httptest.NewServer(b)
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	return b, srv
}

func open(t *testing.T, url string) (*http.Response, *bufio.Scanner) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	return resp, bufio.NewScanner(resp.Body)
}

// TestBrokerSendsChanges: a new stream starts with the latest of every
// frame, then gets only the frames that changed, on a signal or a tick.
func TestBrokerSendsChanges(t *testing.T) {
	var gen atomic.Int64
	changed := make(chan struct{}, 1)
	_, srv := broker(t, BrokerConfig{
		Frames: func(context.Context) []Frame {
			return []Frame{{Name: "fixed", Doc: map[string]int{"v": 1}}, {Name: "gen", Doc: gen.Load()}}
		},
		Changed:  changed,
		Interval: time.Hour, // only the signal refreshes
	})
	_, sc := open(t, srv.URL)
	if got := readEvents(t, sc, 2); got[0] != `fixed {"v":1}` || got[1] != "gen 0" {
		t.Fatalf("first messages %q", got)
	}
	for i := int64(1); i <= 3; i++ {
		gen.Store(i)
		changed <- struct{}{}
		// Only gen changed: fixed is not sent again.
		if got := readEvents(t, sc, 1); got[0] != "gen "+string(rune('0'+i)) {
			t.Fatalf("after change %d: %q", i, got)
		}
	}
	// A second stream starts from the latest frames.
	_, sc2 := open(t, srv.URL)
	if got := readEvents(t, sc2, 2); got[0] != `fixed {"v":1}` || got[1] != "gen 3" {
		t.Fatalf("second stream's first messages %q", got)
	}
}

// TestBrokerDropsSlowStreams: a stream whose buffer fills is closed, and
// the others keep getting every change.
func TestBrokerDropsSlowStreams(t *testing.T) {
	var gen atomic.Int64
	changed := make(chan struct{}, 1)
	b, srv := broker(t, BrokerConfig{
		Frames:   func(context.Context) []Frame { return []Frame{{Name: "gen", Doc: gen.Load()}} },
		Changed:  changed,
		Interval: time.Hour,
		Buffer:   2,
	})
	// A client that never reads: joined directly, as the handler would.
	slow := &client{msgs: make(chan []byte, 2)}
	b.join <- slow
	_, sc := open(t, srv.URL)
	readEvents(t, sc, 1)
	for i := int64(1); i <= 5; i++ {
		gen.Store(i)
		changed <- struct{}{}
		readEvents(t, sc, 1)
	}
	// The slow client's channel was closed after its buffer (the snapshot
	// and one change) filled.
	n := 0
	for range slow.msgs {
		n++
	}
	if n != 2 {
		t.Fatalf("the slow client got %d messages before being dropped, want its buffer of 2", n)
	}
}

// TestBrokerStopEndsStreams: stopping the broker ends every open stream,
// and a stream opened after is refused.
func TestBrokerStopEndsStreams(t *testing.T) {
	b := NewBroker(BrokerConfig{Frames: func(context.Context) []Frame { return []Frame{{Name: "x", Doc: 1}} }, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.Run(ctx); close(done) }()
	srv := httptest.NewServer(b)
	defer srv.Close()
	_, sc := open(t, srv.URL)
	readEvents(t, sc, 1)
	cancel()
	<-done
	for sc.Scan() {
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a stream after stop: %d", resp.StatusCode)
	}
}
