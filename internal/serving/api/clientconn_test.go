package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skulk/skulk/internal/control/event"
	"github.com/skulk/skulk/internal/serving/access"
	"github.com/skulk/skulk/internal/serving/connlimit"
)

// TestClientConnsByKey serves the API behind the connection limit, the way
// a node does, with every client on 127.0.0.1 as behind a reverse proxy:
// one client's 300 idle connections do not stop a client with another key
// from being served at once. The connections count under the key's name,
// never its secret.
func TestClientConnsByKey(t *testing.T) {
	const idle, perClient = 300, 64
	keys := []access.Key{
		{Name: "alice", Scope: event.ScopeInference, Secret: "alice-secret-1"},
		{Name: "bob", Scope: event.ScopeInference, Secret: "bob-secret-22"},
	}
	policy := access.Policy{Ring: access.NewRing(access.NewHasher([32]byte{1}), keys, nil)}
	tests := []struct {
		name      string
		key       string // the idle client's key; "" for none
		status    int    // what the idle client's requests get
		countedAs string // whom its connections count under
	}{
		{name: "one_key", key: "alice-secret-1", status: http.StatusOK, countedAs: `key "alice"`},
		{name: "no_key", status: http.StatusUnauthorized, countedAs: "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ln := connlimit.New(inner, connlimit.Config{PerClient: perClient, Total: 1024})
			logs := &syncBuffer{}
			srv := &http.Server{
				Handler: New(Config{Access: func() access.Policy { return policy },
					ClientConn: func(ctx context.Context, digest, name string) error {
						return ln.Claim(ctx, connlimit.Client{Key: digest, Name: name})
					}}, every(newTestBackend(t)), slog.New(slog.NewTextHandler(logs, nil))),
				ConnState:   ln.ConnState,
				ConnContext: ln.ConnContext,
			}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			addr := inner.Addr().String()

			for range idle {
				if status := getModels(t, dialConn(t, addr), tt.key); status != tt.status {
					t.Fatalf("the idle client's request: %d, want %d", status, tt.status)
				}
			}
			st := ln.Stats()
			t.Logf("after %d connections of the first client: %+v", idle, st)
			if st.Clients[tt.countedAs] > perClient {
				t.Errorf("%s holds %d connections, over its bound %d", tt.countedAs, st.Clients[tt.countedAs], perClient)
			}
			start := time.Now()
			status := getModels(t, dialConn(t, addr), "bob-secret-22")
			took := time.Since(start)
			t.Logf("bob's request: %d in %v", status, took)
			if status != http.StatusOK || took > 2*time.Second {
				t.Fatalf("bob's request: %d in %v, want 200 at once", status, took)
			}
			if n := ln.Stats().Clients[`key "bob"`]; n != 1 {
				t.Errorf("bob holds %d connections, want 1", n)
			}
			for _, k := range keys {
				if strings.Contains(logs.String(), k.Secret) {
					t.Errorf("the log shows %s's secret", k.Name)
				}
			}
		})
	}
}

func dialConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// getModels sends GET /v1/models with key (none when "") on c, reads the answer
// and leaves the connection open; 0 when it was closed unanswered.
func getModels(t *testing.T, c net.Conn, key string) int {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	auth := ""
	if key != "" {
		auth = "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n%s\r\n", auth); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestClientConnRefusal: the API tells ClientConn the key of each request
// (public routes too), and a refusal is a 429 error document in the
// route's format, on a connection the server then closes.
func TestClientConnRefusal(t *testing.T) {
	var mu sync.Mutex
	var heard []string
	f := newFixture(t, Config{APIKey: "admin-key-123", ClientConn: func(ctx context.Context, digest, name string) error {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, name)
		if len(heard) > 1 {
			return connlimit.Refusal{Client: fmt.Sprintf("key %q", name), Limit: 1}
		}
		return nil
	}})
	c := dialConn(t, strings.TrimPrefix(f.url, "http://"))
	br := bufio.NewReader(c)
	ask := func() *http.Response {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin-key-123\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := ask(); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d", resp.StatusCode)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	resp := ask()
	var doc errorDoc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatalf("refusal %d: %v", resp.StatusCode, err)
	}
	want := `too many open connections from key "admin" (limit 1); close idle connections or raise --max-conns-per-client`
	if resp.StatusCode != http.StatusTooManyRequests || doc.Error.Message != want || doc.Error.Code == nil || *doc.Error.Code != "too_many_connections" ||
		!resp.Close {
		t.Fatalf("refusal %d close=%v %+v, want 429 %q and the connection closed", resp.StatusCode, resp.Close, doc, want)
	}
	io.Copy(io.Discard, resp.Body)
	if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("after the refusal the connection is still open (%d, %v)", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(heard, []string{"admin", "admin"}) {
		t.Fatalf("ClientConn heard keys %q, want admin twice", heard)
	}
}
