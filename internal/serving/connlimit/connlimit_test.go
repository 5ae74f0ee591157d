package connlimit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// server accepts from a limited listener on loopback and keeps what it
// accepts, so the test decides when a connection closes.
type server struct {
	ln       *Listener
	accepted chan net.Conn
	refused  chan Refusal
}

func serve(t *testing.T, cfg Config) *server {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{accepted: make(chan net.Conn, 64), refused: make(chan Refusal, 64)}
	cfg.Refused = func(r Refusal) { s.refused <- r }
	s.ln = New(inner, cfg)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := s.ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- c
		}
	})
	t.Cleanup(func() {
		s.ln.Close()
		wg.Wait()
		close(s.accepted)
		for c := range s.accepted {
			c.Close()
		}
	})
	return s
}

// dial connects to addr from the loopback address from (127.0.0.1 when
// empty).
func dial(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from %s (only Linux routes all of 127/8 to loopback): %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (s *server) dial(t *testing.T, from string) net.Conn {
	t.Helper()
	return dial(t, s.ln.Addr().String(), from)
}

// admitted waits for the server to accept the next connection.
func (s *server) admitted(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.accepted:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection was admitted")
		return nil
	}
}

// refusal reads what a refused connection gets: an HTTP response, then
// the end of the connection.
func refusal(t *testing.T, c net.Conn) *http.Response {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the refusal: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the refusal's body: %v", err)
	}
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("after the refusal the connection is still open (%d, %v)", n, err)
	}
	return resp
}

func TestRefusesOverTheLimit(t *testing.T) {
	tests := []struct {
		name        string
		sendRequest bool // the refused client has already written a request
	}{
		{name: "silent_client"},
		{name: "client_sent_a_request", sendRequest: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, Config{PerClient: 2, Grace: time.Minute})
			for range 2 {
				s.dial(t, "127.0.0.1")
				s.admitted(t)
			}
			extra := s.dial(t, "127.0.0.1")
			if tt.sendRequest {
				if _, err := io.WriteString(extra, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
			}
			resp := refusal(t, extra)
			body, _ := io.ReadAll(resp.Body)
			want := "too many open connections from 127.0.0.1 (limit 2); close idle connections or raise --max-conns-per-client"
			if resp.StatusCode != http.StatusTooManyRequests || !resp.Close || resp.Header.Get("Content-Type") != "application/json" ||
				!strings.Contains(string(body), want) {
				t.Fatalf("refusal %d close=%v %v %s, want a 429 JSON error saying %q", resp.StatusCode, resp.Close, resp.Header, body, want)
			}
			if r := <-s.refused; r != (Refusal{Client: "127.0.0.1", Limit: 2}) {
				t.Errorf("refused callback got %+v", r)
			}
			if n := s.ln.Stats().Clients["127.0.0.1"]; n != 2 {
				t.Errorf("%d connections counted open, want 2", n)
			}
		})
	}
}

func TestCountsPerAddress(t *testing.T) {
	s := serve(t, Config{PerClient: 1, Grace: time.Minute})
	s.dial(t, "127.0.0.1")
	first := s.admitted(t)
	// Another address has its own allowance.
	s.dial(t, "127.0.0.2")
	s.admitted(t)
	if resp := refusal(t, s.dial(t, "127.0.0.1")); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second connection from 127.0.0.1: %d", resp.StatusCode)
	}
	// Closing a connection gives its place back, once however often it
	// is closed.
	first.Close()
	first.Close()
	s.dial(t, "127.0.0.1")
	s.admitted(t)
	if st := s.ln.Stats(); st.Clients["127.0.0.1"] != 1 || st.Total != 2 {
		t.Fatalf("counted %+v, want 1 connection from 127.0.0.1 and 2 in all", st)
	}
}

// TestSilentPastGraceMakesRoom: a connection that has sent nothing for
// the grace is closed to admit a new one of its address.
func TestSilentPastGraceMakesRoom(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := serve(t, Config{PerClient: 1, Grace: time.Second, Now: clock})
	old := s.dial(t, "")
	s.admitted(t)
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	s.dial(t, "")
	s.admitted(t)
	old.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := old.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the silent connection is still open (%d, %v)", n, err)
	}
	if st := s.ln.Stats(); st.Total != 1 {
		t.Fatalf("counted %+v, want 1 connection", st)
	}
}

func TestNoLimit(t *testing.T) {
	s := serve(t, Config{})
	for range 5 {
		s.dial(t, "")
		s.admitted(t)
	}
	if st := s.ln.Stats(); st.Total != 0 {
		t.Fatalf("counted %+v with no limit, want nothing", st)
	}
}

// httpServer is an http.Server behind a Listener whose handler claims each
// request for the key of its "Authorization: Bearer KEY" header (the key
// stands for its own identity here), as the API does; GET /hold waits for
// the test to release it.
type httpServer struct {
	ln      *Listener
	addr    string
	release chan struct{}
}

func serveHTTP(t *testing.T, cfg Config) *httpServer {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &httpServer{ln: New(inner, cfg), addr: inner.Addr().String(), release: make(chan struct{})}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if err := s.ln.Claim(r.Context(), Client{Key: key, Name: key}); err != nil {
				w.Header().Set("Connection", "close")
				http.Error(w, err.Error(), http.StatusTooManyRequests)
				return
			}
			if r.URL.Path == "/hold" {
				<-s.release
			}
			io.WriteString(w, "ok")
		}),
		ConnState:   s.ln.ConnState,
		ConnContext: s.ln.ConnContext,
	}
	go srv.Serve(s.ln)
	t.Cleanup(func() {
		close(s.release)
		srv.Close()
	})
	return s
}

// client is one raw HTTP/1.1 connection, kept open between requests.
type client struct {
	c  net.Conn
	br *bufio.Reader
}

func (s *httpServer) connect(t *testing.T, from string) *client {
	t.Helper()
	c := dial(t, s.addr, from)
	return &client{c: c, br: bufio.NewReader(c)}
}

// do sends GET path with key (none when "") and returns the answer's
// status and body; a connection closed before answering gives status 0.
func (c *client) do(t *testing.T, path, key string) (int, string) {
	t.Helper()
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	auth := ""
	if key != "" {
		auth = "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := fmt.Fprintf(c.c, "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n", path, auth); err != nil {
		return 0, err.Error()
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestIdleClientDoesNotLockOthersOut is the case of a reverse proxy on the
// same machine, where every client comes from 127.0.0.1: one client's 300
// idle connections do not stop a client with another key from being
// served at once.
func TestIdleClientDoesNotLockOthersOut(t *testing.T) {
	const idle = 300
	tests := []struct {
		name string
		cfg  Config
		key  string // the idle client's key; "" for none
		// silent: the idle connections never send a request (else each
		// sends one, then stays open).
		silent bool
	}{
		{name: "one_key", cfg: Config{PerClient: 64}, key: "key-a"},
		{name: "no_key", cfg: Config{PerClient: 64}},
		{name: "no_key_silent", cfg: Config{PerClient: 64, Grace: 100 * time.Millisecond}, silent: true},
		{name: "one_key_total_cap", cfg: Config{Total: 100}, key: "key-a"},
		{name: "no_key_total_cap", cfg: Config{PerClient: 64, Total: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := serveHTTP(t, tt.cfg)
			for range idle {
				c := s.connect(t, "127.0.0.1")
				if tt.silent {
					continue
				}
				// Earlier connections of the client are closed to make
				// room for later ones; every request is served.
				if status, body := c.do(t, "/", tt.key); status != http.StatusOK {
					t.Fatalf("the idle client's request: %d %s", status, body)
				}
			}
			if tt.silent {
				time.Sleep(tt.cfg.Grace)
			}
			st := s.ln.Stats()
			t.Logf("after %d connections of the first client: %+v", idle, st)
			start := time.Now()
			status, body := s.connect(t, "127.0.0.1").do(t, "/", "key-b")
			took := time.Since(start)
			t.Logf("the second client's request: %d in %v", status, took)
			if status != http.StatusOK || took > 2*time.Second {
				t.Fatalf("the second client's request: %d %q in %v, want 200 at once", status, body, took)
			}
			if limit := max(tt.cfg.PerClient, tt.cfg.Total); st.Total > limit {
				t.Errorf("%d connections counted open, over the bound %d", st.Total, limit)
			}
		})
	}
}

// TestPerKeyLimit: a key over its bound with every connection busy is
// refused, whatever address it comes from; another key is not.
func TestPerKeyLimit(t *testing.T) {
	s := serveHTTP(t, Config{PerClient: 2})
	var wg sync.WaitGroup
	for _, from := range []string{"127.0.0.1", "127.0.0.2"} {
		c := s.connect(t, from)
		wg.Go(func() { c.do(t, "/hold", "key-a") })
	}
	waitFor(t, func() bool { return s.ln.Stats().Clients[`key "key-a"`] == 2 })
	if status, body := s.connect(t, "127.0.0.3").do(t, "/", "key-a"); status != http.StatusTooManyRequests ||
		body != `too many open connections from key "key-a" (limit 2); close idle connections or raise --max-conns-per-client` {
		t.Fatalf("a third busy connection of key-a: %d %q, want 429", status, body)
	}
	if status, body := s.connect(t, "127.0.0.1").do(t, "/", "key-b"); status != http.StatusOK {
		t.Fatalf("key-b: %d %q", status, body)
	}
	s.release <- struct{}{}
	s.release <- struct{}{}
	wg.Wait()
}

// TestBusyKeylessClient: a client without a key holding its address's
// bound with requests in flight does not refuse a keyed client behind the
// same address; its own next request is refused.
func TestBusyKeylessClient(t *testing.T) {
	s := serveHTTP(t, Config{PerClient: 2})
	var wg sync.WaitGroup
	for range 2 {
		c := s.connect(t, "127.0.0.1")
		wg.Go(func() { c.do(t, "/hold", "") })
	}
	waitFor(t, func() bool { return s.ln.Stats().Clients["127.0.0.1"] == 2 })
	if status, body := s.connect(t, "127.0.0.1").do(t, "/", "key-b"); status != http.StatusOK {
		t.Fatalf("key-b behind the same address: %d %q", status, body)
	}
	if status, body := s.connect(t, "127.0.0.1").do(t, "/", ""); status != http.StatusTooManyRequests ||
		body != "too many open connections from 127.0.0.1 (limit 2); close idle connections or raise --max-conns-per-client" {
		t.Fatalf("a third busy connection without a key: %d %q, want 429", status, body)
	}
	s.release <- struct{}{}
	s.release <- struct{}{}
	wg.Wait()
}

// TestTotalFairShare: at the total bound a newcomer under its fair share
// takes an idle place of the client holding the most, up to the share;
// with every connection busy a newcomer is refused.
func TestTotalFairShare(t *testing.T) {
	s := serveHTTP(t, Config{Total: 4})
	var a []*client
	for range 4 {
		c := s.connect(t, "")
		if status, _ := c.do(t, "/", "key-a"); status != http.StatusOK {
			t.Fatalf("key-a: %d", status)
		}
		a = append(a, c)
	}
	// The server marks a connection idle after it answered: wait, so
	// that every one of key-a's may make room.
	waitFor(t, func() bool { return s.ln.Stats().Idle == 4 })
	for i := range 2 {
		if status, body := s.connect(t, "").do(t, "/", "key-b"); status != http.StatusOK {
			t.Fatalf("key-b's connection %d: %d %q", i, status, body)
		}
	}
	st := s.ln.Stats()
	if st.Total > 4 || st.Clients[`key "key-a"`] != 2 || st.Clients[`key "key-b"`] != 2 {
		t.Fatalf("counted %+v, want key-a and key-b holding 2 each", st)
	}
	// Two of key-a's connections were closed for key-b; the other two
	// still serve.
	open := 0
	for _, c := range a {
		if status, _ := c.do(t, "/", "key-a"); status == http.StatusOK {
			open++
		}
	}
	if open != 2 {
		t.Errorf("%d of key-a's connections still serve, want 2", open)
	}

	// Every place busy: a newcomer is refused at once.
	busy := serveHTTP(t, Config{Total: 2})
	var wg sync.WaitGroup
	for range 2 {
		c := busy.connect(t, "")
		wg.Go(func() { c.do(t, "/hold", "key-a") })
	}
	waitFor(t, func() bool { return busy.ln.Stats().Clients[`key "key-a"`] == 2 })
	status, body := busy.connect(t, "").do(t, "/", "key-b")
	if want := "the server holds its most open connections (2) and none can be closed for this one; retry shortly, or raise --max-conns"; status != http.StatusTooManyRequests ||
		!strings.Contains(body, want) {
		t.Fatalf("a newcomer while every place is busy: %d %q, want 429 %q", status, body, want)
	}
	busy.release <- struct{}{}
	busy.release <- struct{}{}
	wg.Wait()
}

// TestClaimWithoutListener: requests on connections the Listener did not
// accept are not counted.
func TestClaimWithoutListener(t *testing.T) {
	ln := New(nil, Config{PerClient: 1})
	if err := ln.Claim(context.Background(), Client{Key: "k"}); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
