package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Defaults for the zero values of Spec.
const (
	// DefaultGrace is how long Kill waits after SIGTERM before SIGKILL.
	DefaultGrace = 5 * time.Second
	// DefaultMaxLine bounds one logged stderr line; longer lines are cut and
	// marked truncated.
	DefaultMaxLine = 16 << 10
	// stderrDrain is how long the reaper waits, after the child exited, for
	// the rest of its stderr (a grandchild may still hold the pipe).
	stderrDrain = 2 * time.Second
)

// ErrUnsupported is returned by Start where process groups are unavailable.
var ErrUnsupported = errors.New("supervise: process groups are not supported on this system")

// ErrNotExited is returned by Wait when its context ends before the child.
var ErrNotExited = errors.New("supervise: the child has not exited")

// Spec describes a child process.
type Spec struct {
	// Path is the program; "" re-executes this binary (os.Executable).
	Path string
	// Args are the arguments after the program name, e.g. {"runner"}.
	Args []string
	// Env holds extra KEY=VALUE entries added to this process's environment.
	Env []string
	// Dir is the working directory; "" inherits ours.
	Dir string
	// Logger receives each stderr line with the attribute stream=stderr:
	// a slog JSON record keeps its level, message and attributes, any other
	// line is an Info record of its text. Give it the child's identity
	// with Logger.With. nil discards stderr.
	Logger *slog.Logger
	// Grace is the time between SIGTERM and SIGKILL in Kill (0 = DefaultGrace).
	Grace time.Duration
	// MaxLine bounds one stderr line in bytes (0 = DefaultMaxLine).
	MaxLine int
}

// Exit is how a child ended.
type Exit struct {
	Pid    int
	Code   int    // the exit code; -1 when a signal ended it
	Signal string // the signal that ended it, e.g. "killed"; "" for an exit
	Err    error  // a wait failure other than the child's own exit status
}

// Success reports a clean exit with code 0.
func (e Exit) Success() bool { return e.Err == nil && e.Signal == "" && e.Code == 0 }

func (e Exit) String() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("wait failed: %v", e.Err)
	case e.Signal != "":
		return "signal: " + e.Signal
	default:
		return fmt.Sprintf("exit status %d", e.Code)
	}
}

// Process is a started child in its own process group.
type Process struct {
	// Immutable after Start.
	cmd    *exec.Cmd
	pid    int
	grace  time.Duration
	stdin  *os.File
	stdout *os.File
	done   chan struct{} // closed once the child is reaped and stderr drained

	// Written by the reaper goroutine before done is closed; read after.
	exit Exit

	closeOnce sync.Once
}

// Start starts the child described by s. ctx bounds only the start itself;
// the child lives until it exits or Kill ends it. The caller owns the
// returned Process and must end it with Kill or Wait.
func Start(ctx context.Context, s Spec) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("supervise: start: %w", err)
	}
	path := s.Path
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("supervise: find own executable: %w", err)
		}
		path = exe
	}
	attr, err := sysProcAttr()
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("supervise: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("supervise: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("supervise: stderr pipe: %w", err)
	}
	// *os.File streams go to the child as they are: exec starts no copying
	// goroutines, and Wait does not close our ends behind the reader's back.
	cmd := exec.Command(path, s.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.Dir = s.Dir
	if len(s.Env) > 0 {
		cmd.Env = append(os.Environ(), s.Env...)
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("supervise: start %s: %w", path, err)
	}
	closeAll(inR, outW, errW) // the child holds these now
	p := &Process{
		cmd:    cmd,
		pid:    cmd.Process.Pid,
		grace:  s.Grace,
		stdin:  inW,
		stdout: outR,
		done:   make(chan struct{}),
	}
	if p.grace <= 0 {
		p.grace = DefaultGrace
	}
	maxLine := s.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	logger := s.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		logLines(errR, logger.With("pid", p.pid, "stream", "stderr"), maxLine)
	}()
	go p.reap(errR, logged)
	return p, nil
}

// reap waits for the child, kills what is left of its group, drains stderr
// and publishes the exit.
func (p *Process) reap(stderr *os.File, logged <-chan struct{}) {
	err := p.cmd.Wait()
	// Nothing of the group may outlive its leader.
	_ = signalGroup(p.pid, syscall.SIGKILL)
	t := time.NewTimer(stderrDrain)
	select {
	case <-logged:
	case <-t.C:
		_ = stderr.SetReadDeadline(time.Now())
		<-logged
	}
	t.Stop()
	stderr.Close()
	p.exit = exitOf(p.pid, p.cmd.ProcessState, err)
	close(p.done)
}

func exitOf(pid int, st *os.ProcessState, err error) Exit {
	e := Exit{Pid: pid, Code: -1}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		e.Err = err
		return e
	}
	if st == nil {
		return e
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = ws.Signal().String()
		return e
	}
	e.Code = st.ExitCode()
	return e
}

// Pid is the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.pid }

// Stdin is the write end of the child's standard input. Closing it sends the
// child end-of-file.
func (p *Process) Stdin() io.WriteCloser { return p.stdin }

// Stdout is the read end of the child's standard output. It reaches EOF once
// every process of the group has exited.
func (p *Process) Stdout() io.Reader { return p.stdout }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit returns how the child ended; it is valid only after Done is closed.
func (p *Process) Exit() Exit {
	<-p.done
	return p.exit
}

// Wait waits for the child to exit on its own, or for ctx to end
// (ErrNotExited, wrapped with ctx's error).
func (p *Process) Wait(ctx context.Context) (Exit, error) {
	select {
	case <-p.done:
		p.closePipes()
		return p.exit, nil
	case <-ctx.Done():
		return Exit{}, fmt.Errorf("%w: %w", ErrNotExited, ctx.Err())
	}
}

// Signal sends sig to every process of the child's group.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := signalGroup(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("supervise: signal %v to group %d: %w", sig, p.pid, err)
	}
	return nil
}

// Kill ends the child's whole process group: SIGTERM, then SIGKILL once the
// grace period passes or ctx ends, and waits until the child is reaped. It is
// safe to call after the child exited, and more than once.
func (p *Process) Kill(ctx context.Context) (Exit, error) {
	select {
	case <-p.done:
		p.closePipes()
		return p.exit, nil
	default:
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return Exit{}, err
	}
	t := time.NewTimer(p.grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	case <-ctx.Done():
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return Exit{}, err
	}
	<-p.done // SIGKILL cannot be caught; the reaper follows at once
	p.closePipes()
	return p.exit, nil
}

// closePipes closes our ends of stdin and stdout once the child is gone.
func (p *Process) closePipes() {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		p.stdout.Close()
	})
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
