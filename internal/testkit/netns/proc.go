//go:build linux

package netns

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is a process started by Host.Start, in its own process group inside
// the host's namespace, with its stdout and stderr captured line by line.
type Proc struct {
	// Immutable after Start.
	host *Host
	name string
	argv []string
	env  []string
	cmd  *exec.Cmd
	log  *lineLog
	done chan struct{} // closed when the process has exited and its output is read

	err error // written before done is closed
}

// Start runs argv inside the host's namespace (through `ip netns exec`) in a
// new process group, with the test process's environment plus env
// ("KEY=value" entries). It fails the test if the process cannot start. The
// process is killed in cleanup, and by the kernel if the test binary dies.
func (h *Host) Start(name string, argv []string, env []string) *Proc {
	h.c.t.Helper()
	p, err := h.start(name, argv, env)
	if err != nil {
		h.c.t.Fatalf("netns: start %s on %s: %v", name, h.name, err)
	}
	return p
}

func (h *Host) start(name string, argv, env []string) (*Proc, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty argv")
	}
	p := &Proc{host: h, name: name, argv: argv, env: env, log: newLineLog(), done: make(chan struct{})}
	full := append([]string{"netns", "exec", h.ns}, argv...)
	p.cmd = exec.Command("ip", full...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// A grandchild that keeps the output pipe open must not hang Wait.
	p.cmd.WaitDelay = 2 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	h.c.mu.Lock()
	h.c.procs = append(h.c.procs, p)
	h.c.mu.Unlock()
	go func() {
		p.err = p.cmd.Wait()
		p.log.close()
		close(p.done)
	}()
	return p, nil
}

// Name returns the name given to Start.
func (p *Proc) Name() string { return p.name }

// Host returns the host the process runs on.
func (p *Proc) Host() *Host { return p.host }

// Pid returns the process id (also its process group id).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Running reports whether the process has not exited yet.
func (p *Proc) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Wait waits for the process to exit and returns what exec.Cmd.Wait did:
// nil for a zero exit status, an *exec.ExitError otherwise.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// Kill sends SIGKILL to the process group and waits for the exit.
func (p *Proc) Kill() {
	p.kill()
	<-p.done
}

func (p *Proc) kill() { p.signal(syscall.SIGKILL) }

func (p *Proc) signal(sig syscall.Signal) {
	if p.Running() {
		_ = syscall.Kill(-p.Pid(), sig) // ESRCH: the group is gone
	}
}

// Stop sends SIGTERM to the process group, waits for the exit up to the
// cluster's StopGrace, then sends SIGKILL and waits.
func (p *Proc) Stop() {
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(p.host.c.opt.StopGrace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Kill()
	}
}

// Restart stops the process (Stop) if it is running and starts the same
// command again on the same host; it fails the test if that cannot start.
func (p *Proc) Restart() *Proc {
	p.host.c.t.Helper()
	p.Stop()
	return p.host.Start(p.name, p.argv, p.env)
}

// Output returns everything the process has printed so far.
func (p *Proc) Output() string { return strings.Join(p.log.lines(0), "\n") }

// Lines returns how many complete lines the process has printed, for
// WaitLogFrom.
func (p *Proc) Lines() int { return len(p.log.lines(0)) }

// WaitLog waits up to timeout for a line of output that matches pattern and
// returns the regexp's submatches. It fails with a *LogTimeoutError when no
// line matched in time or before the process exited.
func (p *Proc) WaitLog(pattern string, timeout time.Duration) ([]string, error) {
	return p.WaitLogFrom(0, pattern, timeout)
}

// WaitLogFrom is WaitLog over the lines from index from on (see Lines).
func (p *Proc) WaitLogFrom(from int, pattern string, timeout time.Duration) ([]string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		lines, changed, closed := p.log.snapshot(from)
		for _, l := range lines {
			if m := re.FindStringSubmatch(l); m != nil {
				return m, nil
			}
		}
		from += len(lines)
		fail := &LogTimeoutError{Proc: p.name, Host: p.host.name, Pattern: pattern, Timeout: timeout, Tail: p.log.tail(20)}
		if closed {
			fail.Exited = true
			return nil, fail
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, fail
		}
	}
}

// lineLog is an io.Writer that splits what is written into lines and lets
// readers wait for more.
type lineLog struct {
	mu      sync.Mutex
	done    []string      // guarded by mu: complete lines
	partial []byte        // guarded by mu: the unterminated end
	changed chan struct{} // guarded by mu: closed and replaced on each new line
	closed  bool          // guarded by mu: no more writes will come
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, b...)
	added := false
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			break
		}
		l.done = append(l.done, strings.TrimSuffix(string(l.partial[:i]), "\r"))
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		l.notifyLocked()
	}
	return len(b), nil
}

// close flushes an unterminated last line and wakes every waiter for good.
func (l *lineLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.partial) > 0 {
		l.done = append(l.done, string(l.partial))
		l.partial = nil
	}
	l.closed = true
	l.notifyLocked()
}

func (l *lineLog) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// snapshot returns the lines from index from, a channel closed on the next
// line, and whether the log is closed.
func (l *lineLog) snapshot(from int) (lines []string, changed <-chan struct{}, closed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < len(l.done) {
		lines = append(lines, l.done[from:]...)
	}
	return lines, l.changed, l.closed
}

func (l *lineLog) lines(from int) []string {
	lines, _, _ := l.snapshot(from)
	return lines
}

// tail returns the last n lines, with an unterminated end.
func (l *lineLog) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.done[max(0, len(l.done)-n):]
	s := strings.Join(lines, "\n")
	if len(l.partial) > 0 {
		s += "\n" + string(l.partial)
	}
	return s
}
