package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHTTPBounds drives one real node with short bounds through what a
// careless or hostile client can do: a body that trickles, a kept-alive
// connection left idle, a flood of connections from one address, several
// prompts of megabytes, values of a megabyte in error paths. Each is
// answered with its own message, and meanwhile a probe client from another
// address is served within 100 ms of its baseline (its one-token chat
// beside the megabyte prompts within a second: see huge_prompt).
func TestHTTPBounds(t *testing.T) {
	const (
		bodyTimeout = time.Second
		idleTimeout = time.Second
		maxConns    = 16
	)
	n := startNode(t, t.TempDir(), "SKULK_HTTP_BODY_TIMEOUT="+bodyTimeout.String(),
		"SKULK_HTTP_IDLE_TIMEOUT="+idleTimeout.String(), fmt.Sprintf("SKULK_MAX_CONNS_PER_CLIENT=%d", maxConns))
	inst := n.place()
	n.waitStatus(inst, "ready")
	addr := strings.TrimPrefix(n.base, "http://")

	// Every client below has its own loopback address (Linux routes all of
	// 127/8 to lo), so the per-address limit counts each alone.
	p := newProbe(t, n.base, "127.0.0.2")
	baseline := p.during(t, func() { time.Sleep(time.Second) })
	t.Logf("probe baseline: %s", baseline)

	t.Run("slow_body", func(t *testing.T) {
		const clients = 8
		var wg sync.WaitGroup
		got := make([]string, clients)
		lat := p.during(t, func() {
			for i := range clients {
				wg.Go(func() { got[i] = trickle(t, addr, "127.0.0.3") })
			}
			wg.Wait()
		})
		for i, g := range got {
			if want := "408 the request body did not arrive within 1s"; !strings.HasPrefix(g, want) || !strings.HasSuffix(g, " closed") {
				t.Errorf("slow client %d got %q, want %q and the connection closed", i, g, want)
			}
		}
		p.check(t, baseline, lat, 100*time.Millisecond, 100*time.Millisecond)
	})

	t.Run("idle_keepalive", func(t *testing.T) {
		var closedAfter time.Duration
		lat := p.during(t, func() {
			c := dialFrom(t, "127.0.0.4", addr)
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			idle := time.Now()
			c.SetReadDeadline(idle.Add(idleTimeout + 10*time.Second))
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("an idle kept-alive connection: %v, want it closed by the node (EOF)", err)
			}
			closedAfter = time.Since(idle)
		})
		t.Logf("the idle connection was closed after %v (idle timeout %v)", closedAfter.Round(time.Millisecond), idleTimeout)
		if closedAfter < idleTimeout/2 {
			t.Errorf("closed after %v, before the idle timeout of %v", closedAfter, idleTimeout)
		}
		p.check(t, baseline, lat, 100*time.Millisecond, 100*time.Millisecond)
	})

	t.Run("connection_flood", func(t *testing.T) {
		lat := p.during(t, func() {
			var held []net.Conn
			for range maxConns + 10 {
				held = append(held, dialFrom(t, "127.0.0.5", addr))
			}
			want := fmt.Sprintf("too many open connections from 127.0.0.5 (limit %d); close idle connections or raise --max-conns-per-client", maxConns)
			for i, c := range held[maxConns:] {
				if g := answer(t, c, "", ""); g != "429 "+want {
					t.Errorf("extra connection %d got %q, want 429 %q", i, g, want)
				}
			}
			for i, c := range held[:maxConns] {
				if g := answer(t, c, "GET /v1/models", ""); !strings.HasPrefix(g, "200 ") {
					t.Errorf("admitted connection %d got %q, want 200", i, g)
				}
			}
			// Closed connections are uncounted: the address may connect again.
			for _, c := range held {
				c.Close()
			}
			waitFor(t, 10*time.Second, "a connection after the flood closed", func() bool {
				return strings.HasPrefix(answer(t, dialFrom(t, "127.0.0.5", addr), "GET /v1/models", ""), "200 ")
			})
		})
		p.check(t, baseline, lat, 100*time.Millisecond, 100*time.Millisecond)
	})

	t.Run("huge_prompt", func(t *testing.T) {
		big := strings.Repeat("Once upon a time ", 3_900_000/17)
		msgs := []map[string]any{{"role": "user", "content": big}}
		formats := []struct{ request, body string }{
			{"POST /v1/chat/completions", mustJSON(t, map[string]any{"model": "stories260k", "max_tokens": 1, "messages": msgs})},
			{"POST /v1/messages", mustJSON(t, map[string]any{"model": "stories260k", "max_tokens": 1, "messages": msgs})},
			{"POST /api/chat", mustJSON(t, map[string]any{"model": "stories260k", "stream": false, "options": map[string]any{"num_predict": 1}, "messages": msgs})},
		}
		const concurrent = 8 // as many as the issue measured (a normal request then waited 7.9 s)
		got := make([]string, concurrent)
		took := make([]time.Duration, concurrent)
		var wg sync.WaitGroup
		lat := p.during(t, func() {
			for i := range concurrent {
				f := formats[i%len(formats)]
				wg.Go(func() {
					start := time.Now()
					got[i] = answer(t, dialFrom(t, "127.0.0.6", addr), f.request, f.body)
					took[i] = time.Since(start)
				})
			}
			wg.Wait()
		})
		for i, g := range got {
			want := "400 the prompt has at least"
			if !strings.HasPrefix(g, want) || !strings.Contains(g, "but the context window is 2048 tokens") {
				t.Errorf("%s: got %.200q, want %q", formats[i%len(formats)].request, g, want)
			}
		}
		slices.Sort(took)
		t.Logf("%d concurrent %d-byte prompts refused in %v (fastest) to %v (slowest)", concurrent, len(big),
			took[0].Round(time.Millisecond), took[concurrent-1].Round(time.Millisecond))
		// The worker refuses such a prompt before it crosses the runner's
		// pipe (the runner told it its window and prompt bound when it
		// loaded), so no other request waits behind megabytes of it: the
		// chat probe stays near 20 ms on an otherwise idle 2-core machine.
		// What remains is the CPU that decoding 31 MB of JSON takes from
		// the probe's own request, which under the parallel test run can
		// reach 100-150 ms, and the same CPU is taken from the model
		// listing (the node's two cores decode JSON for all eight). A
		// probe queued behind the prompts would wait about as long as they
		// take to be refused; on a loaded machine, where everything is
		// slower, half the median refusal still tells waiting behind them
		// from sharing the CPU with them.
		allowance := max(250*time.Millisecond, took[concurrent/2]/2)
		p.check(t, baseline, lat, allowance, allowance)
	})

	t.Run("long_values", func(t *testing.T) {
		long := strings.Repeat("m", 1<<20)
		msgs := []map[string]any{{"role": "user", "content": "hi"}}
		for _, tt := range []struct{ request, body string }{
			{"POST /v1/chat/completions", mustJSON(t, map[string]any{"model": long, "messages": msgs})},
			{"POST /v1/messages", mustJSON(t, map[string]any{"model": long, "max_tokens": 1, "messages": msgs})},
			{"POST /api/chat", mustJSON(t, map[string]any{"model": long, "messages": msgs})},
			{"GET /v1/" + long[:512<<10], ""},
			{"GET /api/" + long[:512<<10], ""},
		} {
			g := answer(t, dialFrom(t, "127.0.0.7", addr), tt.request, tt.body)
			if !strings.HasPrefix(g, "404 ") || len(g) > 1024 || !strings.Contains(g, "bytes)") {
				t.Errorf("%.40s…: got a %d-byte answer %.300q, want a 404 whose message quotes a cut value in under 1 KiB", tt.request, len(g), g)
			}
		}
	})
}

// probe measures what another client sees while a subtest runs: from its
// own address it sends, every 50 ms, a GET /v1/models (the API alone) and,
// in parallel, a one-token chat completion (the API, the gateway, the
// worker and the runner).
type probe struct {
	client *http.Client
	base   string
}

func newProbe(t *testing.T, base, from string) *probe {
	t.Helper()
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &probe{client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, base: base}
}

// latencies are one kind of probe's measurements over one subtest.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func (l latencies) String() string {
	return fmt.Sprintf("%d probes, p50 %v, p90 %v, max %v", len(l), l.quantile(0.5).Round(time.Microsecond),
		l.quantile(0.9).Round(time.Microsecond), l.quantile(1).Round(time.Microsecond))
}

// probed is what both kinds of probe measured.
type probed struct{ models, chat latencies }

func (p probed) String() string { return fmt.Sprintf("models: %s; chat: %s", p.models, p.chat) }

// during probes until f returns (and each kind at least five times).
func (p *probe) during(t *testing.T, f func()) probed {
	t.Helper()
	done := make(chan struct{})
	var mu sync.Mutex
	var errs []string
	measure := func(send func() (*http.Response, error)) latencies {
		var out latencies
		for i := 0; ; i++ {
			select {
			case <-done:
				if i >= 5 {
					return out
				}
			default:
			}
			start := time.Now()
			resp, err := send()
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s", resp.Status)
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
			} else {
				out = append(out, time.Since(start))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	chat := mustJSON(t, storyRequest(false, 1))
	var res probed
	var wg sync.WaitGroup
	wg.Go(func() {
		res.models = measure(func() (*http.Response, error) { return p.client.Get(p.base + "/v1/models") })
	})
	wg.Go(func() {
		res.chat = measure(func() (*http.Response, error) {
			return p.client.Post(p.base+"/v1/chat/completions", "application/json", strings.NewReader(chat))
		})
	})
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			close(done)
			wg.Wait()
		}
	}
	defer stop() // also when f fails the test
	f()
	stop()
	if len(errs) > 0 {
		t.Errorf("the probe failed %d times: %v", len(errs), errs)
	}
	if len(res.models) == 0 || len(res.chat) == 0 {
		t.Fatal("no probe succeeded")
	}
	return res
}

// check holds the probes to their bounds: their typical latency (p50) at
// most the allowance over the baseline's (modelsAllowance, chatAllowance),
// and none held up for over two seconds more than the baseline's slowest —
// generous, since the machine the test runs on is shared.
func (p *probe) check(t *testing.T, baseline, during probed, modelsAllowance, chatAllowance time.Duration) {
	t.Helper()
	t.Logf("probes: %s", during)
	for _, k := range []struct {
		name      string
		base, got latencies
		allowance time.Duration
	}{
		{"GET /v1/models", baseline.models, during.models, modelsAllowance},
		{"one-token chat", baseline.chat, during.chat, chatAllowance},
	} {
		if limit := k.base.quantile(0.5) + k.allowance; k.got.quantile(0.5) > limit {
			t.Errorf("%s: p50 latency %v, over %v (its baseline %v + %v)", k.name, k.got.quantile(0.5), limit, k.base.quantile(0.5), k.allowance)
		}
		if limit := k.base.quantile(1) + 2*time.Second; k.got.quantile(1) > limit {
			t.Errorf("%s: a probe took %v, over %v (the baseline's slowest + 2 s)", k.name, k.got.quantile(1), limit)
		}
	}
}

// dialFrom opens a TCP connection from the loopback address from; it is
// closed when the test ends. It may be called from any goroutine: a
// failure to dial is an error of the test, and a connection that answers
// nothing.
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Errorf("dial %s from %s: %v", addr, from, err)
		c1, c2 := net.Pipe()
		c2.Close()
		return c1
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// answer sends request ("METHOD PATH", or nothing when empty) with body on
// c and returns "STATUS MESSAGE": the message of an error document, else
// the body.
func answer(t *testing.T, c net.Conn, request, body string) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if request != "" {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", request, len(body), body)
		if _, err := c.Write(b.Bytes()); err != nil {
			return "write: " + err.Error()
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "read: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, errorMessage(b))
}

// errorMessage is the message of an error document of any wire format
// (OpenAI's and Anthropic's {"error":{"message"}}, Ollama's {"error":"..."}),
// or b itself.
func errorMessage(b []byte) string {
	var doc struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &doc) != nil || doc.Error == nil {
		return string(b)
	}
	var msg string
	if json.Unmarshal(doc.Error, &msg) == nil {
		return msg
	}
	var obj struct{ Message string }
	json.Unmarshal(doc.Error, &obj)
	return obj.Message
}

// trickle sends a chat request whose body comes a byte a second, from the
// address from, and returns "STATUS MESSAGE" of the answer followed by
// " closed" when the node then closes the connection.
func trickle(t *testing.T, addr, from string) string {
	t.Helper()
	c := dialFrom(t, from, addr)
	body := mustJSON(t, storyRequest(false, 1))
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; i < len(body); i++ {
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "read: " + err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	out := fmt.Sprintf("%d %s", resp.StatusCode, errorMessage(b))
	if _, err := br.ReadByte(); err != nil {
		out += " closed"
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
