package node_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// skulkBin is the skulk binary built once for the end-to-end tests.
var skulkBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skulk-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	skulkBin = filepath.Join(dir, "skulk")
	if bin := os.Getenv("SKULK_BENCH_BINARY"); bin != "" {
		// Benchmarks of another build (A/B against an older commit).
		skulkBin = bin
	} else {
		build := exec.Command("go", "build", "-o", skulkBin, "github.com/skulk/skulk/cmd/skulk")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building skulk:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// node is a real `skulk run` process.
type node struct {
	t    testing.TB
	home string
	cmd  *exec.Cmd
	base string // http://host:port
	logs *logBuffer
	done chan struct{}
}

type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

var servingRE = regexp.MustCompile(`msg=serving .*api=(\S+)`)

// startNode runs `skulk run` with home on a free loopback port and waits
// until it serves.
func startNode(t testing.TB, home string, env ...string) *node {
	t.Helper()
	return startArgs(t, []string{"run", "--home", home, "--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--quic-addr", "127.0.0.1:0", "--no-mdns", "--threads", "1"}, env)
}

// startArgs runs skulk with args (a `run` command) and waits until it serves.
func startArgs(t testing.TB, args []string, env []string) *node {
	t.Helper()
	home := ""
	for i, a := range args {
		if a == "--home" && i+1 < len(args) {
			home = args[i+1]
		}
	}
	cmd := exec.Command(skulkBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, home: home, cmd: cmd, logs: &logBuffer{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			n.logs.Write([]byte(line + "\n"))
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { cmd.Wait(); close(n.done) }()
	select {
	case a := <-addr:
		n.base = "http://" + a
	case <-n.done:
		t.Fatalf("skulk run exited before serving:\n%s", n.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("skulk run did not serve within 30 s:\n%s", n.logs)
	}
	t.Cleanup(func() {
		n.stop()
		if t.Failed() {
			t.Logf("node logs:\n%s", n.logs)
		}
	})
	return n
}

// stop ends the node with SIGTERM and waits; the whole process group goes.
func (n *node) stop() {
	select {
	case <-n.done:
		return
	default:
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.done
	}
	// Runners run in their own process groups; none may outlive the node.
	for _, pid := range runnerPIDs(n.cmd.Process.Pid) {
		n.t.Errorf("runner %d outlived its node", pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// runnerPIDs lists the live child processes of pid that run `skulk runner`.
func runnerPIDs(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the ")" closing the command name: state ppid ...
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid != pid {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "runner") {
			out = append(out, child)
		}
	}
	return out
}

func (n *node) do(method, path string, body any) (int, []byte) {
	n.t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
	}
	req, _ := http.NewRequest(method, n.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	// No request of these tests takes long: a hang fails the test (with
	// the node's logs) instead of the whole run timing out.
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		n.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type stateDoc struct {
	Instances map[string]struct {
		Model   string `json:"model"`
		Status  string `json:"status"`
		Runners []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"runners"`
		Placement []struct {
			Node string `json:"node"`
		} `json:"placement"`
	} `json:"instances"`
	Failures []struct {
		Instance string `json:"instance"`
		Category string `json:"category"`
	} `json:"failures"`
	StateHash   string         `json:"stateHash"`
	Nodes       map[string]any `json:"nodes"`
	LastApplied uint64         `json:"lastAppliedIndex"`
	Tracing     bool           `json:"tracing"`
}

func (n *node) state() stateDoc {
	n.t.Helper()
	code, b := n.do("GET", "/state", nil)
	if code != 200 {
		n.t.Fatalf("GET /state: %d %s", code, b)
	}
	var s stateDoc
	if err := json.Unmarshal(b, &s); err != nil {
		n.t.Fatal(err)
	}
	return s
}

// place places the demo model and returns the instance id.
func (n *node) place() string {
	n.t.Helper()
	code, b := n.do("POST", "/place_instance", map[string]any{"model_id": "stories260k"})
	if code != 200 {
		n.t.Fatalf("place: %d %s", code, b)
	}
	var r struct {
		InstanceID string `json:"instance_id"`
		CommandID  string `json:"command_id"`
	}
	json.Unmarshal(b, &r)
	if r.InstanceID == "" || r.InstanceID != r.CommandID {
		n.t.Fatalf("place answer %s", b)
	}
	return r.InstanceID
}

// waitStatus waits until the instance has the status (or, for "gone", is absent).
func (n *node) waitStatus(inst, want string) {
	n.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		s := n.state()
		in, ok := s.Instances[inst]
		if (want == "gone" && !ok) || (ok && in.Status == want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.t.Fatalf("instance %s never became %s: %+v", inst, want, n.state().Instances[inst])
}

// storyRequest asks for the greedy continuation of "Once upon a time".
func storyRequest(stream bool, maxTokens int) map[string]any {
	return map[string]any{
		"model": "stories260k", "temperature": 0, "max_tokens": maxTokens, "stream": stream,
		"messages": []map[string]any{{"role": "user", "content": "Once upon a time"}},
	}
}

// llamaCppStory is llama.cpp's greedy 64-token continuation of "Once upon a
// time" on stories260K (testdata/reference/stories260K.json, case g01).
const llamaCppStory = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said"

// sse reads a streamed chat completion: the concatenated content, the
// finish reason, and an error event if one came.
type sseResult struct {
	content, finish, errMsg string
	chunks                  int
	done                    bool
}

func readSSE(r io.Reader, onChunk func(int, string)) sseResult {
	var res sseResult
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			res.done = true
			break
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(data), &c) != nil {
			continue
		}
		if c.Error != nil {
			res.errMsg = c.Error.Message
			continue
		}
		res.chunks++
		for _, ch := range c.Choices {
			res.content += ch.Delta.Content
			if ch.FinishReason != nil {
				res.finish = *ch.FinishReason
			}
		}
		if onChunk != nil {
			onChunk(res.chunks, res.content)
		}
	}
	return res
}

func (n *node) stream(ctx context.Context, body map[string]any, onChunk func(int, string)) (sseResult, error) {
	return streamChat(ctx, http.DefaultClient, n.base+"/v1/chat/completions", "", body, onChunk)
}

// streamChat posts a streamed chat completion to url through c (with the
// bearer key when key is set) and reads its events.
func streamChat(ctx context.Context, c *http.Client, url, key string, body map[string]any, onChunk func(int, string)) (sseResult, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return sseResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return sseResult{}, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return readSSE(resp.Body, onChunk), nil
}

// hasEnv reports whether env sets name (possibly to the empty string).
func hasEnv(env []string, name string) bool {
	return slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
}
