package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawConn opens a plain TCP connection to the fixture's server, for
// requests net/http's client would not send (a body that trickles).
func (f *fixture) rawConn(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second)) // a hang fails the test, not the run
	return c, bufio.NewReader(c)
}

// TestSlowBody: a body that trickles in (a byte every 100 ms) is answered
// 408 in the route's wire format once the body deadline passes, and the
// connection is closed.
func TestSlowBody(t *testing.T) {
	const timeout = 300 * time.Millisecond
	f := newFixture(t, Config{BodyTimeout: timeout})
	tests := []struct {
		name, path string
		typ        string // the format's error type, where it has one
	}{
		{name: "openai", path: "/v1/chat/completions", typ: `"type":"invalid_request_error"`},
		{name: "anthropic", path: "/v1/messages", typ: `"type":"timeout_error"`},
		{name: "ollama", path: "/api/chat"},
		{name: "control", path: "/place_instance", typ: `"code":"request_timeout"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, br := f.rawConn(t)
			body := chatBody
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", tt.path, len(body))
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for i := 0; i < len(body); i++ {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := c.Write([]byte{body[i]}); err != nil {
						return
					}
				}
			}()
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := "the request body did not arrive within 300ms"
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(messageOf(t, b), want) || !strings.Contains(string(b), tt.typ) {
				t.Fatalf("%d %s, want a 408 saying %q with %s", resp.StatusCode, b, want, tt.typ)
			}
			if !resp.Close {
				t.Errorf("the 408 does not say Connection: close (header %v)", resp.Header)
			}
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("the connection stays open after the 408")
			}
		})
	}
}

// TestBodyDeadlineEndsWithTheBody: the body deadline bounds the body only.
// A stream that outlasts it is not cut, and a kept-alive connection serves
// its next request after a pause longer than it.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	const timeout = 200 * time.Millisecond
	f := newFixture(t, Config{BodyTimeout: timeout})
	t.Run("stream", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.url+"/v1/chat/completions",
			strings.NewReader(`{"model":"block","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if resp.StatusCode != http.StatusOK || err != nil || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("first event: %d %q %v", resp.StatusCode, line, err)
		}
		time.Sleep(4 * timeout)
		select {
		case err := <-f.b.cancelled:
			t.Fatalf("the stream was cut (%v) after the body deadline passed", err)
		default:
		}
		resp.Body.Close()
		select {
		case <-f.b.cancelled: // the task ends when the client leaves, not before
		case <-time.After(5 * time.Second):
			t.Fatal("closing the stream did not cancel the task")
		}
	})
	t.Run("keep_alive", func(t *testing.T) {
		c, br := f.rawConn(t)
		for i := range 2 {
			if i > 0 {
				time.Sleep(3 * timeout)
			}
			fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(chatBody), chatBody)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Close {
				t.Fatalf("request %d on the kept-alive connection: %d close=%v %s", i, resp.StatusCode, resp.Close, b)
			}
		}
	})
}

// TestUploadBodyKeepsMoving: an upload's body may take longer than the
// body deadline as long as it keeps moving (a byte every 100 ms for 1.2 s
// against 300 ms); a body that stops for longer is cut.
func TestUploadBodyKeepsMoving(t *testing.T) {
	b := &modelBackend{testBackend: newTestBackend(t)}
	srv := httptest.NewServer(New(Config{BodyTimeout: 300 * time.Millisecond}, every(b), nil))
	t.Cleanup(srv.Close)
	digest := strings.Repeat("ab", 32)
	tests := []struct {
		name  string
		pause time.Duration // before the last byte
		ok    bool
	}{
		{name: "moving", pause: 100 * time.Millisecond, ok: true},
		{name: "stalled", pause: time.Second, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(10 * time.Second))
			const n = 12
			fmt.Fprintf(c, "PUT /models/upload/%s?name=m.gguf&id=m HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", digest, n)
			for i := range n {
				time.Sleep(100 * time.Millisecond)
				if i == n-1 {
					time.Sleep(tt.pause - 100*time.Millisecond)
				}
				if _, err := c.Write([]byte{'x'}); err != nil {
					break
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := resp.StatusCode == http.StatusOK; got != tt.ok || (tt.ok && !strings.Contains(string(body), "body=12")) {
				t.Fatalf("%d %s, want ok %v", resp.StatusCode, body, tt.ok)
			}
		})
	}
}
