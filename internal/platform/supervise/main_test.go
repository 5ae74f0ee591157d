package supervise

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childEnv selects a child role when the test binary re-executes itself, so
// the tests supervise real processes.
const childEnv = "SUPERVISE_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

// runChild plays one role and returns the exit code.
func runChild(role string) int {
	switch role {
	case "echo": // copy stdin lines to stdout until EOF
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println(sc.Text())
		}
		return 0
	case "exit7":
		return 7
	case "stderr": // lines, a long line, a line without newline
		fmt.Fprintln(os.Stderr, "first line")
		fmt.Fprintln(os.Stderr, strings.Repeat("x", 100))
		fmt.Fprintln(os.Stderr, "after long")
		fmt.Fprint(os.Stderr, "no newline")
		return 0
	case "slog": // records from slog's JSON handler, as the runner writes them
		log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		log.Warn("weights are slow to read", "file", "m.gguf", "mib_per_s", 12.5, "tries", 3)
		log.Debug("detail", slog.Group("req", "id", "t1"))
		fmt.Fprintln(os.Stderr, "plain text")
		return 0
	case "group": // start a grandchild sharing stdout, report both pids, wait
		exe, _ := os.Executable()
		gc := exec.Command(exe, "-test.run=^$")
		gc.Env = append(os.Environ(), childEnv+"=sleep")
		gc.Stdout = os.Stdout
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("%d %d\n", os.Getpid(), gc.Process.Pid)
		sleepForever()
	case "sleep":
		fmt.Println("sleeping")
		sleepForever()
	case "stubborn": // ignore SIGTERM, so only SIGKILL ends it
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		sleepForever()
	}
	fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
	return 2
}

// sleepForever blocks until a signal ends the process. A bare select{}
// would not: with no other goroutine the runtime reports a deadlock and exits
// with status 2 (the race detector's helper goroutines hide that).
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// start starts the test binary in role and kills it when the test ends.
func start(t *testing.T, role string, mod func(*Spec)) *Process {
	t.Helper()
	s := Spec{Args: []string{"-test.run=^$"}, Env: []string{childEnv + "=" + role}, Grace: 200 * time.Millisecond}
	if mod != nil {
		mod(&s)
	}
	p, err := Start(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := p.Kill(ctx); err != nil {
			t.Errorf("cleanup kill: %v", err)
		}
	})
	return p
}

// readLine reads one line from r within the deadline.
func readLine(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		s, err := br.ReadString('\n')
		ch <- res{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read line: %v (got %q)", r.err, r.s)
		}
		return strings.TrimSuffix(r.s, "\n")
	case <-time.After(20 * time.Second):
		t.Fatal("no line from the child within 20s")
		return ""
	}
}

// recorder is a slog.Handler that keeps every record for inspection.
type recorder struct {
	shared *recorded
	attrs  []slog.Attr
}

// recorded is shared by a recorder and the handlers derived from it.
type recorded struct {
	mu      sync.Mutex
	records []record // guarded by mu
}

type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newRecorder() *recorder { return &recorder{shared: new(recorded)} }

func (h *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	rec := record{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.shared.mu.Lock()
	h.shared.records = append(h.shared.records, rec)
	h.shared.mu.Unlock()
	return nil
}

func (h *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &recorder{shared: h.shared, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *recorder) WithGroup(string) slog.Handler { return h }

// all returns the records so far.
func (h *recorder) all() []record {
	h.shared.mu.Lock()
	defer h.shared.mu.Unlock()
	return append([]record(nil), h.shared.records...)
}

// pidAlive reports whether pid names a live, non-zombie process.
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs (macOS): kill succeeded
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

func killPid(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
