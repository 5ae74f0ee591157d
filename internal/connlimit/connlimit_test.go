package connlimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/netip"
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
	refused  chan netip.Addr
}

func serve(t *testing.T, limit int) *server {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{accepted: make(chan net.Conn, 64), refused: make(chan netip.Addr, 64)}
	s.ln = New(inner, limit, func(a netip.Addr) { s.refused <- a })
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

// dial connects from the loopback address from (127.0.0.1 when empty).
func (s *server) dial(t *testing.T, from string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Skipf("cannot dial from %s (only Linux routes all of 127/8 to loopback): %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
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
			s := serve(t, 2)
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
			if a := <-s.refused; a != netip.MustParseAddr("127.0.0.1") {
				t.Errorf("refused callback got %s", a)
			}
			if n := s.ln.Open(netip.MustParseAddr("127.0.0.1")); n != 2 {
				t.Errorf("%d connections counted open, want 2", n)
			}
		})
	}
}

func TestCountsPerAddress(t *testing.T) {
	s := serve(t, 1)
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
	if n := s.ln.Open(netip.MustParseAddr("127.0.0.1")); n != 1 {
		t.Fatalf("%d connections counted open from 127.0.0.1, want 1", n)
	}
}

func TestNoLimit(t *testing.T) {
	s := serve(t, 0)
	for range 5 {
		s.dial(t, "")
		s.admitted(t)
	}
	if n := s.ln.Open(netip.MustParseAddr("127.0.0.1")); n != 0 {
		t.Fatalf("%d connections counted with no limit, want none", n)
	}
}

// TestServesHTTP: an http.Server behind the listener serves the admitted
// connections and keeps serving them while others are refused.
func TestServesHTTP(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := New(inner, 1, nil)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}, Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	get := func() string {
		t.Helper()
		resp, err := client.Get("http://" + ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get(); got != "ok" {
		t.Fatalf("first request: %q", got)
	}
	// The client's kept-alive connection is the address's one; a second
	// connection is refused, and the first still serves.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if resp := refusal(t, c); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second connection: %d", resp.StatusCode)
	}
	if got := get(); got != "ok" {
		t.Fatalf("request after the refusal: %q", got)
	}
}
