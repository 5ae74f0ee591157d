package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
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

// The tests in this file drive the real skulk binary against a live node.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// skulkBinary builds cmd/skulk once for the tests that run it.
func skulkBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "skulk-cli-test-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "skulk")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = &exitError{code: 1, err: errorString("go build: " + err.Error() + "\n" + string(out))}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type errorString string

func (e errorString) Error() string { return string(e) }

var servingRE = regexp.MustCompile(`msg=serving .*api=(\S+)`)

// liveNode is a `skulk serve` process on loopback.
type liveNode struct {
	host string // HOST:PORT of its API
	logs *bytes.Buffer
	mu   *sync.Mutex
}

// startLiveNode starts `skulk serve` with a fresh home and waits until it
// serves; the node stops with the test, and its log shows then if it failed.
func startLiveNode(t *testing.T, args ...string) *liveNode {
	t.Helper()
	return startNode(t, nil, append([]string{"--api-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0", "--quic-addr", "127.0.0.1:0"}, args...)...)
}

// startNode starts `skulk serve` with a fresh home, the extra environment
// env and args, as startLiveNode does.
func startNode(t *testing.T, env []string, args ...string) *liveNode {
	t.Helper()
	bin := skulkBinary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--home", t.TempDir(), "--no-mdns", "--threads", "1"}, args...)...)
	cmd.Env = append(os.Environ(), append([]string{"SKULK_HOST=", "SKULK_API_KEY=", "SKULK_PORT=", "SKULK_API_ADDR="}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &liveNode{logs: &bytes.Buffer{}, mu: &sync.Mutex{}}
	addr := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			n.mu.Lock()
			n.logs.WriteString(sc.Text() + "\n")
			n.mu.Unlock()
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("node log:\n%s", n.log())
		}
	})
	select {
	case n.host = <-addr:
	case <-done:
		t.Fatalf("skulk serve exited:\n%s", n.log())
	case <-time.After(60 * time.Second):
		t.Fatalf("skulk serve did not serve within 60 s:\n%s", n.log())
	}
	return n
}

func (n *liveNode) log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.logs.String()
}

// skulk runs the binary with stdin and extra environment; it returns the
// exit status, stdout and stderr.
func (n *liveNode) skulk(t *testing.T, stdin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(skulkBinary(t), args...)
	cmd.Env = append(os.Environ(), append([]string{"SKULK_HOST=" + n.host, "SKULK_API_KEY="}, env...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func (n *liveNode) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get("http://" + n.host + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, b)
	}
}

// TestLiveClientCommands runs the client commands, their Ollama-style
// aliases and their errors against a node.
func TestLiveClientCommands(t *testing.T) {
	n := startLiveNode(t)
	instance := ""
	tests := []struct {
		name string
		args []string
		env  []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{"list", []string{"list"}, nil, 0, "stories260k", ""},
		{"ls", []string{"ls"}, nil, 0, "built-in", ""},
		{"models_list", []string{"models", "list"}, nil, 0, "stories260k", ""},
		{"show", []string{"show", "stories260k"}, nil, 0, "5 layers", ""},
		{"show_unknown", []string{"show", "nope"}, nil, 1, "", "skulk models list"},
		{"host_flag_wins", []string{"ls", "--host", "127.0.0.1:1"}, nil, 1, "", "cannot reach a skulk node at http://127.0.0.1:1"},
		{"skulk_host", []string{"ps"}, []string{"SKULK_HOST=127.0.0.1:1"}, 1, "", "--host or SKULK_HOST"},
		{"place", []string{"place", "stories260k"}, nil, 0, "", "ready in"},
		{"place_again", []string{"place", "stories260k"}, nil, 0, "", "--replicas 2"},
		{"ps", []string{"ps"}, nil, 0, "stories260k  ready", ""},
		{"stop_unknown", []string{"stop", "nope"}, nil, 1, "", "'skulk ps' lists the instances"},
		{"no_key", []string{"ls"}, []string{"SKULK_API_KEY=wrong"}, 0, "stories260k", ""},
		{"one_shot_arg", []string{"run", "stories260k", "Once upon a time", "--max-tokens", "16", "--temperature", "0"}, nil, 0, "there was", ""},
		{"one_shot_piped", []string{"run", "stories260k", "--max-tokens", "16", "--temperature", "0", "--verbose"}, nil, 0, "there was", "tokens/s"},
		{"run_empty_pipe", []string{"run", "stories260k"}, nil, 0, "", "chatting with stories260k"},
		{"chat_piped_lines", []string{"chat", "stories260k", "--max-tokens", "8"}, nil, 0, ">>> ", ""},
		{"complete_models", []string{"__complete", "chat", "st"}, nil, 0, "stories260k", ""},
		{"complete_instances", []string{"__complete", "stop", ""}, nil, 0, "stories260k ready", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdin := ""
			if tt.name == "one_shot_piped" {
				stdin = "Once upon a time\n"
			}
			code, out, errs := n.skulk(t, stdin, tt.env, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.err) {
				t.Fatalf("skulk %s: exit %d\nstdout %q\nstderr %q\nwant exit %d, %q in stdout, %q in stderr",
					strings.Join(tt.args, " "), code, out, errs, tt.code, tt.out, tt.err)
			}
			if tt.name == "place" {
				instance = strings.TrimSpace(out)
			}
		})
	}
	if code, out, _ := n.skulk(t, "", nil, "stop", instance); code != 0 || !strings.Contains(out, "stopped "+instance) {
		t.Errorf("stop %s: exit %d %q", instance, code, out)
	}
}

// TestLiveStopNames: skulk stop takes an instance's id, a unique prefix of
// it, or a model (every instance of it); an ambiguous prefix is refused
// naming the instances it starts.
func TestLiveStopNames(t *testing.T) {
	n := startLiveNode(t, "--max-instances", "17", "--max-instances-per-model", "17")
	// Ids are random: place instances until two ids start alike (17 at
	// most, as there are 16 hex digits; about 5 on average).
	var ids []string
	shared := ""
	for k := 2; shared == ""; k++ {
		if code, out, errs := n.skulk(t, "", nil, "place", "stories260k", "--replicas", strconv.Itoa(k)); code != 0 {
			t.Fatalf("place --replicas %d: exit %d %q %q", k, code, out, errs)
		}
		ids = liveInstances(t, n)
		if len(ids) != k {
			t.Fatalf("%d instances after place --replicas %d: %v", len(ids), k, ids)
		}
		for i := range ids {
			for j := i + 1; j < len(ids); j++ {
				if p := commonPrefix(ids[i], ids[j]); len(p) > len(shared) {
					shared = p
				}
			}
		}
	}

	t.Logf("%d instances; %q starts more than one id", len(ids), shared)
	code, out, errs := n.skulk(t, "", nil, "stop", shared)
	if code != 1 || out != "" || !strings.Contains(errs, "give more of the id") {
		t.Fatalf("stop %s (ambiguous): exit %d %q %q", shared, code, out, errs)
	}
	for _, id := range ids {
		if strings.HasPrefix(id, shared) != strings.Contains(errs, id) {
			t.Errorf("stop %s: the refusal %q should name exactly the instances whose id starts so; %s does not follow", shared, errs, id)
		}
	}
	if got := liveInstances(t, n); len(got) != len(ids) {
		t.Fatalf("an ambiguous stop stopped something: %v, had %v", got, ids)
	}

	// The shortest prefix that names the first instance alone.
	victim, prefix := ids[0], ""
	for l := 1; prefix == ""; l++ {
		if unique := !slices.ContainsFunc(ids[1:], func(id string) bool { return strings.HasPrefix(id, ids[0][:l]) }); unique {
			prefix = ids[0][:l]
		}
	}
	if code, out, errs := n.skulk(t, "", nil, "stop", prefix); code != 0 || out != "stopped "+victim+"\n" {
		t.Fatalf("stop %s (unique prefix of %s): exit %d %q %q", prefix, victim, code, out, errs)
	}
	rest := liveInstances(t, n)
	if slices.Contains(rest, victim) || len(rest) != len(ids)-1 {
		t.Fatalf("after stop %s: %v, had %v", prefix, rest, ids)
	}

	if code, out, _ := n.skulk(t, "", nil, "__complete", "stop", "stories"); code != 0 || !strings.Contains(out, "stories260k\tevery instance of the model") {
		t.Errorf("completing a model for stop: exit %d %q", code, out)
	}
	code, out, errs = n.skulk(t, "", nil, "stop", "stories260k")
	if code != 0 {
		t.Fatalf("stop stories260k: exit %d %q %q", code, out, errs)
	}
	for _, id := range rest {
		if !strings.Contains(out, "stopped "+id+"\n") {
			t.Errorf("stop stories260k: %q does not say it stopped %s", out, id)
		}
	}
	if got := liveInstances(t, n); len(got) != 0 {
		t.Fatalf("after stop stories260k: %v", got)
	}
	if code, _, errs := n.skulk(t, "", nil, "stop", "stories260k"); code != 1 || !strings.Contains(errs, "'skulk ps' lists the instances") {
		t.Errorf("stop stories260k with none left: exit %d %q", code, errs)
	}
}

// liveInstances lists the node's instances, sorted.
func liveInstances(t *testing.T, n *liveNode) []string {
	t.Helper()
	var st struct {
		Instances map[string]json.RawMessage `json:"instances"`
	}
	n.getJSON(t, "/state", &st)
	return slices.Sorted(maps.Keys(st.Instances))
}

// commonPrefix is the longest prefix a and b share.
func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// TestLivePort: a node started with --port N serves its API on N and
// listens for gossip on N+1 and QUIC on N+2, each on its address's host.
func TestLivePort(t *testing.T) {
	port := freePorts(t)
	// SKULK_API_ADDR's host stays; --port, a flag, wins over its port.
	n := startNode(t, []string{"SKULK_API_ADDR=127.0.0.1:1"}, "--port", strconv.Itoa(port))
	if want := fmt.Sprintf("127.0.0.1:%d", port); n.host != want {
		t.Fatalf("the node serves on %s, want %s", n.host, want)
	}
	if want := fmt.Sprintf("api=127.0.0.1:%d api_open=false metrics_public=false gossip=0.0.0.0:%d quic=0.0.0.0:%d", port, port+1, port+2); !strings.Contains(n.log(), want) {
		t.Errorf("the start log lacks %q", want)
	}
	if re := regexp.MustCompile(fmt.Sprintf(`msg=serving .*quic=\S+:%d gossip=\S+:%d`, port+2, port+1)); !re.MatchString(n.log()) {
		t.Errorf("the node does not say it listens on %s", re)
	}
	if code, out, errs := n.skulk(t, "", nil, "ls", "--host", fmt.Sprintf("localhost:%d", port)); code != 0 || !strings.Contains(out, "stories260k") {
		t.Fatalf("skulk ls --host localhost:%d: exit %d %q %q", port, code, out, errs)
	}
}

// freePorts finds a port N with N and N+1 free for TCP and N+1 and N+2
// free for UDP, as --port N needs.
func freePorts(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		var held []io.Closer
		ok := port+2 <= 65535
		for _, p := range []struct {
			network string
			port    int
		}{{"tcp", port + 1}, {"udp", port + 1}, {"udp", port + 2}} {
			if !ok {
				break
			}
			var c io.Closer
			if p.network == "tcp" {
				c, err = net.Listen("tcp", fmt.Sprintf("0.0.0.0:%d", p.port))
			} else {
				c, err = net.ListenPacket("udp", fmt.Sprintf("0.0.0.0:%d", p.port))
			}
			if err != nil {
				ok = false
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
		l.Close()
		if ok {
			return port
		}
	}
	t.Fatal("found no three free ports in a row")
	return 0
}

// TestLiveVersionAgrees: skulk version, the start log, /api/version and
// the diagnostics report the same version and commit.
func TestLiveVersionAgrees(t *testing.T) {
	n := startLiveNode(t)
	code, out, _ := n.skulk(t, "", nil, "version")
	m := regexp.MustCompile(`^skulk version (\S+) \(commit (\S+)\)\n$`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("skulk version: exit %d %q", code, out)
	}
	ver, commit := m[1], m[2]
	if _, flagOut, _ := n.skulk(t, "", nil, "--version"); flagOut != out {
		t.Errorf("--version %q, version %q", flagOut, out)
	}
	if !strings.Contains(n.log(), "version="+ver+" commit="+commit) {
		t.Errorf("the start log lacks version=%s commit=%s", ver, commit)
	}
	var api struct{ SkulkVersion, SkulkCommit string }
	n.getJSON(t, "/api/version", &struct {
		V *string `json:"skulk_version"`
		C *string `json:"skulk_commit"`
	}{&api.SkulkVersion, &api.SkulkCommit})
	if api.SkulkVersion != ver || api.SkulkCommit != commit {
		t.Errorf("/api/version %+v; skulk version %s %s", api, ver, commit)
	}
	var diag struct {
		Nodes []struct{ Version, Commit string } `json:"nodes"`
	}
	n.getJSON(t, "/v1/diagnostics/cluster", &diag)
	if len(diag.Nodes) != 1 || diag.Nodes[0].Version != ver || diag.Nodes[0].Commit != commit {
		t.Errorf("diagnostics %+v; skulk version %s %s", diag, ver, commit)
	}
}

// TestLivePlaceExclude: skulk place --exclude takes a node by name or by
// the start of its id; excluding the only node is refused, saying so.
func TestLivePlaceExclude(t *testing.T) {
	n := startLiveNode(t, "--name", "studio")
	var st struct {
		Nodes map[string]any `json:"nodes"`
	}
	n.getJSON(t, "/state", &st)
	var id string
	for k := range st.Nodes {
		id = k
	}
	for _, ref := range []string{"studio", id[:6]} {
		code, out, errs := n.skulk(t, "", nil, "place", "stories260k", "--exclude", ref)
		if code == 0 || !strings.Contains(errs, "exclude fewer") {
			t.Fatalf("place --exclude %s (the only node): exit %d %q %q", ref, code, out, errs)
		}
	}
	if code, out, errs := n.skulk(t, "", nil, "place", "stories260k", "--exclude", "elsewhere"); code != 0 || strings.TrimSpace(out) == "" {
		t.Fatalf("place --exclude elsewhere: exit %d %q %q", code, out, errs)
	}
}
