package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/platform/supervise"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// Client defaults.
const (
	// DefaultFirstStatusDeadline is how long Load waits for a new runner's
	// first status report before giving it up (the seed's 120 s).
	DefaultFirstStatusDeadline = 120 * time.Second
	// DefaultShutdownGrace is how long Close waits for a runner to stop on
	// its own after the shutdown command before killing its process group.
	DefaultShutdownGrace = 10 * time.Second
)

// Errors.
var (
	// ErrClosed is returned by calls on a Client whose runner has exited.
	ErrClosed = errors.New("runner: the runner has exited")
	// ErrNoFirstStatus is returned by Load when the runner stays silent past
	// its first-status deadline; the runner has been killed.
	ErrNoFirstStatus = errors.New("runner: no first status report before the deadline")
	// ErrDuplicateTask is returned by Generate for a task id already in flight.
	ErrDuplicateTask = errors.New("runner: task id already in flight")
)

// LoadError is a load the runner reported as failed.
type LoadError struct {
	Status proto.Status
}

func (e *LoadError) Error() string { return "runner: load failed: " + e.Status.Reason }

// Options configure a Client.
type Options struct {
	FirstStatusDeadline time.Duration // 0 = DefaultFirstStatusDeadline
	ShutdownGrace       time.Duration // 0 = DefaultShutdownGrace
	Logger              *slog.Logger  // nil discards
}

// SelfSpec returns the Spec that re-executes this binary as a runner; add
// the child's identity to logger with With.
func SelfSpec(logger *slog.Logger, args ...string) supervise.Spec {
	return supervise.Spec{Args: append([]string{"runner"}, args...), Logger: logger}
}

// Client is the parent's handle on one runner process. It is safe for
// concurrent use. One goroutine (run) owns the table of tasks in flight; one
// reads the runner's stdout, one writes its stdin, and one per task delivers
// chunks to the caller. Close stops them all.
type Client struct {
	// Immutable after Start.
	proc     *supervise.Process
	opt      Options
	log      *slog.Logger
	lines    chan []byte       // to the stdin writer
	register chan registerReq  // to run
	forget   chan forgetReq    // to run
	statuses chan proto.Status // from run; closed when the runner is gone
	quit     chan struct{}     // closed by Close: stop the writer and the pumps
	done     chan struct{}     // closed when run has ended
	wg       sync.WaitGroup    // the reader, the writer and run
	pumps    sync.WaitGroup    // one per task stream

	closeOnce sync.Once
	exit      supervise.Exit // written by run before done is closed
	stall     *StallError    // written by run before done is closed; nil unless the watchdog killed the runner
}

type registerReq struct {
	task   string             // "" registers the load waiter
	stream *stream            // for a generate task
	embed  chan proto.Message // for an embed task: its answer (capacity 1)
	load   chan proto.Status  // for the load
	stage  bool               // the load makes the runner a pipeline stage
	reply  chan error
}

type forgetReq struct {
	task   string
	cancel bool // also tell the runner to cancel it
}

// Start starts a runner process described by spec. ctx bounds only the
// start. The caller must Close the Client.
func Start(ctx context.Context, spec supervise.Spec, opt Options) (*Client, error) {
	if opt.FirstStatusDeadline <= 0 {
		opt.FirstStatusDeadline = DefaultFirstStatusDeadline
	}
	if opt.ShutdownGrace <= 0 {
		opt.ShutdownGrace = DefaultShutdownGrace
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p, err := supervise.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("runner: start: %w", err)
	}
	c := &Client{
		proc:     p,
		opt:      opt,
		log:      log.With("runner_pid", p.Pid()),
		lines:    make(chan []byte, 64),
		register: make(chan registerReq),
		forget:   make(chan forgetReq),
		statuses: make(chan proto.Status, 16),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	msgs := make(chan proto.Message)
	c.wg.Add(3)
	go func() { defer c.wg.Done(); c.readLoop(msgs) }()
	go func() { defer c.wg.Done(); c.writeLoop() }()
	go func() { defer c.wg.Done(); c.run(msgs) }()
	return c, nil
}

// Pid is the runner's process id.
func (c *Client) Pid() int { return c.proc.Pid() }

// Stall says why the watchdog killed the runner, once Done is closed: nil
// when it did not.
func (c *Client) Stall() error {
	<-c.done
	if c.stall == nil {
		return nil
	}
	return c.stall
}

// Done is closed once the runner has exited and every task in flight has
// been ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Exit is how the runner ended; valid once Done is closed.
func (c *Client) Exit() supervise.Exit {
	<-c.done
	return c.exit
}

// Statuses delivers the runner's status changes after Load returns,
// ending with a stopped or failed status when the runner exits (the reason
// names the exit); then it is closed. It is buffered, and a runner reports
// only a handful of statuses in its life, so a slow reader loses none.
func (c *Client) Statuses() <-chan proto.Status { return c.statuses }

// Load asks the runner to load spec and waits until it is ready (its Status
// is returned) or failed (a *LoadError). A runner that sends no status
// within the first-status deadline is killed (ErrNoFirstStatus). A runner
// that dies while loading gives a *LoadError with the exit as reason.
func (c *Client) Load(ctx context.Context, spec proto.LoadSpec) (proto.Status, error) {
	w := make(chan proto.Status, 8)
	if err := c.call(ctx, registerReq{load: w, stage: spec.Pipeline != nil}); err != nil {
		return proto.Status{}, err
	}
	if err := c.send(ctx, proto.Command{Op: proto.OpLoad, Load: &spec}); err != nil {
		return proto.Status{}, err
	}
	first := time.NewTimer(c.opt.FirstStatusDeadline)
	defer first.Stop()
	deadline := first.C
	for {
		select {
		case st, ok := <-w:
			if !ok {
				return proto.Status{}, ErrClosed
			}
			deadline = nil
			switch st.State {
			case proto.StateReady:
				return st, nil
			case proto.StateFailed, proto.StateStopped:
				return st, &LoadError{Status: st}
			}
		case <-deadline:
			c.log.Error("runner sent no status before its deadline; killing it", "deadline", c.opt.FirstStatusDeadline)
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opt.ShutdownGrace)
			c.proc.Kill(kctx)
			cancel()
			return proto.Status{}, fmt.Errorf("%w (%v)", ErrNoFirstStatus, c.opt.FirstStatusDeadline)
		case <-ctx.Done():
			return proto.Status{}, fmt.Errorf("runner: load: %w", ctx.Err())
		}
	}
}

// Generate starts task on the runner and returns its chunks, which end with
// exactly one chunk of kind done or error; then the channel is closed. A
// runner that dies mid-task ends it with an error chunk of class internal.
// When ctx ends first, the runner is told to cancel the task, undelivered
// chunks are dropped and the channel is closed. Use Cancel to stop a task
// and still receive its final chunk (done, finish_reason "cancelled").
func (c *Client) Generate(ctx context.Context, task string, req request.Request) (<-chan request.Chunk, error) {
	if task == "" {
		return nil, fault.Errorf(fault.ClassInvalid, "runner: empty task id")
	}
	line, err := proto.MarshalLine(proto.Command{Op: proto.OpGenerate, Generate: &proto.GenerateCmd{Task: task, Request: req}})
	if err != nil {
		return nil, fault.Errorf(fault.ClassInvalid, "runner: encode request: %v", err)
	}
	if len(line) > proto.MaxLine {
		return nil, fault.Errorf(fault.ClassTooLarge, "the request is %d bytes encoded; a runner takes at most %d", len(line), proto.MaxLine)
	}
	s := &stream{ctx: ctx, out: make(chan request.Chunk), wake: make(chan struct{}, 1)}
	if err := c.call(ctx, registerReq{task: task, stream: s}); err != nil {
		return nil, err
	}
	if err := c.sendLine(ctx, line); err != nil {
		c.drop(task, false)
		return nil, err
	}
	c.pumps.Add(1)
	go func() { defer c.pumps.Done(); c.pump(task, s) }()
	return s.out, nil
}

// Embed runs embedding task on the runner and returns its result. The
// runner's refusals and failures are *fault.Error values (invalid_request
// for a model that does not produce embeddings or a dimensions it cannot
// give; internal when the runner dies). When ctx ends first, the runner is
// told to cancel the task and ctx's error is returned.
func (c *Client) Embed(ctx context.Context, task string, req request.EmbedRequest) (request.EmbedResult, error) {
	if task == "" {
		return request.EmbedResult{}, fault.Errorf(fault.ClassInvalid, "runner: empty task id")
	}
	line, err := proto.MarshalLine(proto.Command{Op: proto.OpEmbed, Embed: &proto.EmbedCmd{Task: task, Request: req}})
	if err != nil {
		return request.EmbedResult{}, fault.Errorf(fault.ClassInvalid, "runner: encode request: %v", err)
	}
	if len(line) > proto.MaxLine {
		return request.EmbedResult{}, fault.Errorf(fault.ClassTooLarge, "the request is %d bytes encoded; a runner takes at most %d", len(line), proto.MaxLine)
	}
	answer := make(chan proto.Message, 1)
	if err := c.call(ctx, registerReq{task: task, embed: answer}); err != nil {
		return request.EmbedResult{}, err
	}
	if err := c.sendLine(ctx, line); err != nil {
		c.drop(task, false)
		return request.EmbedResult{}, err
	}
	select {
	case m := <-answer:
		if m.Error != nil {
			return request.EmbedResult{}, m.Error
		}
		return *m.Embedding, nil
	case <-ctx.Done():
		c.drop(task, true)
		return request.EmbedResult{}, fmt.Errorf("runner: embed: %w", ctx.Err())
	}
}

// Cancel tells the runner to cancel task. The task's channel still ends with
// its final chunk (done, finish_reason "cancelled", unless it had finished).
func (c *Client) Cancel(ctx context.Context, task string) error {
	return c.send(ctx, proto.Command{Op: proto.OpCancel, Cancel: &proto.CancelCmd{Task: task}})
}

// Close asks the runner to shut down (which ends the tasks in flight with
// done, finish_reason "cancelled"), waits up to the shutdown grace (or until
// ctx ends) for it to exit, then kills its process group. It then waits for
// callers to take their tasks' last chunks until ctx ends, drops what is
// left, and waits for every goroutine of the Client.
func (c *Client) Close(ctx context.Context) error {
	var err error
	c.closeOnce.Do(func() {
		gctx, cancel := context.WithTimeout(ctx, c.opt.ShutdownGrace)
		defer cancel()
		if c.send(gctx, proto.Command{Op: proto.OpShutdown}) == nil && c.sendLine(gctx, nil) == nil {
			c.proc.Wait(gctx)
		}
		_, err = c.proc.Kill(ctx)
		<-c.done
		pumped := make(chan struct{})
		go func() { c.pumps.Wait(); close(pumped) }()
		select {
		case <-pumped:
		case <-ctx.Done():
		}
		close(c.quit)
		<-pumped
		c.wg.Wait()
	})
	return err
}

// call sends a registration to run and waits for its answer.
func (c *Client) call(ctx context.Context, r registerReq) error {
	r.reply = make(chan error, 1)
	select {
	case c.register <- r:
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.reply
}

// drop removes task from run's table, optionally telling the runner to
// cancel it.
func (c *Client) drop(task string, cancel bool) {
	select {
	case c.forget <- forgetReq{task: task, cancel: cancel}:
	case <-c.done:
	}
}

func (c *Client) send(ctx context.Context, cmd proto.Command) error {
	line, err := proto.MarshalLine(cmd)
	if err != nil {
		return fmt.Errorf("runner: encode %s: %w", cmd.Op, err)
	}
	return c.sendLine(ctx, line)
}

func (c *Client) sendLine(ctx context.Context, line []byte) error {
	select {
	case c.lines <- line:
		return nil
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLoop writes queued lines to the runner's stdin until Close. A nil
// line closes stdin, which the runner reads as the end of its input. After a
// write error (the runner is gone) it discards lines.
func (c *Client) writeLoop() {
	w := c.proc.Stdin()
	var werr error
	for {
		select {
		case line := <-c.lines:
			if line == nil && werr == nil {
				werr = w.Close()
				if werr == nil {
					werr = errors.New("stdin closed")
				}
				continue
			}
			if werr == nil {
				if _, werr = w.Write(line); werr != nil {
					c.log.Debug("runner stdin closed", "err", werr)
				}
			}
		case <-c.quit:
			return
		}
	}
}

// readLoop decodes the runner's stdout until it ends.
func (c *Client) readLoop(msgs chan<- proto.Message) {
	defer close(msgs)
	lr := proto.NewLineReader(c.proc.Stdout(), proto.MaxLine)
	for {
		line, err := lr.Next()
		if err != nil && !errors.Is(err, proto.ErrProtocol) {
			if !errors.Is(err, io.EOF) {
				c.log.Debug("runner stdout ended", "err", err)
			}
			return
		}
		if err == nil && len(line) == 0 {
			continue
		}
		var m proto.Message
		if err == nil {
			m, err = proto.DecodeMessage(line)
		}
		if err != nil {
			c.log.Warn("bad line from runner", "err", err)
			continue
		}
		msgs <- m // run reads msgs until it is closed
	}
}

// inflight is run's record of one task: a generate task's stream or an
// embed task's answer channel.
type inflight struct {
	stream    *stream
	embed     chan proto.Message
	abandoned bool // the caller's ctx ended; waiting for the runner's last chunk
}

// fail ends the task with e.
func (t *inflight) fail(task string, e *fault.Error) {
	if t.embed != nil {
		t.embed <- proto.Message{Type: proto.TypeEmbedding, Task: task, Error: e}
		return
	}
	t.stream.push(request.Chunk{Kind: request.ChunkError, Error: e})
}

// run owns the task table: it routes the runner's messages and ends every
// task when the runner exits.
func (c *Client) run(msgs <-chan proto.Message) {
	defer close(c.done)
	tasks := map[string]*inflight{}
	var load chan proto.Status // the load waiter; nil when none
	loaded := false
	procDone := c.proc.Done()
	var last *proto.Status // the runner's last own report
	var w watch
	// A pipeline stage serves the pipeline's requests, which the node
	// never registers here: once loaded it counts as busy, and silence
	// alone (a stopped or hung process) marks it stalled.
	stage := false
	tick := time.NewTicker(proto.HeartbeatInterval)
	defer tick.Stop()
	for msgs != nil || procDone != nil {
		select {
		case now := <-tick.C:
			w.busy((len(tasks) > 0 || stage) && load == nil && c.stall == nil, now)
			if e := w.stalled(now, stage && len(tasks) == 0); e != nil {
				c.stall = e
				c.log.Error("runner stalled; ending its tasks and killing it", "err", e)
				for id, t := range tasks {
					if !t.abandoned {
						t.fail(id, stallChunk(e))
					}
					delete(tasks, id)
				}
				// SIGKILL: a stopped process takes no other signal. Its
				// exit ends this loop as any exit does.
				if err := c.proc.Signal(syscall.SIGKILL); err != nil {
					c.log.Warn("could not kill the stalled runner", "err", err)
				}
			}
		case m, ok := <-msgs:
			if !ok {
				msgs = nil
				continue
			}
			now := time.Now()
			w.line(now)
			if len(tasks) == 0 {
				w.busy(false, now)
			} else if load == nil {
				w.busy(true, now)
			}
			switch m.Type {
			case proto.TypeProgress:
				w.progress(*m.Progress, now)
				continue
			case proto.TypeStatus:
				st := *m.Status
				last = &st
				if load != nil {
					load <- st
					if st.State != proto.StateLoading && st.State != proto.StateWarming {
						close(load)
						load = nil
					}
				} else {
					c.status(st)
				}
			case proto.TypeChunk:
				w.chunk(now)
				t, ok := tasks[m.Task]
				if !ok || t.stream == nil {
					c.log.Debug("chunk for an unknown task", "task", m.Task)
					continue
				}
				terminal := m.Chunk.Kind == request.ChunkDone || m.Chunk.Kind == request.ChunkError
				if t.abandoned {
					if terminal {
						c.log.Debug("abandoned task ended", "task", m.Task, "kind", m.Chunk.Kind, "finish", m.Chunk.FinishReason)
					}
				} else {
					t.stream.push(*m.Chunk)
				}
				if terminal {
					delete(tasks, m.Task)
				}
			case proto.TypeError:
				c.log.Warn("runner refused a command", "task", m.Task, "class", m.Error.Class, "err", m.Error.Message)
				if t, ok := tasks[m.Task]; ok && m.Error.Class == fault.ClassConflict {
					// Only a duplicate id is answered this way; the task
					// is not the one registered here.
					if !t.abandoned {
						t.fail(m.Task, m.Error)
					}
					delete(tasks, m.Task)
				}
			case proto.TypeEmbedding:
				t, ok := tasks[m.Task]
				if !ok || t.embed == nil {
					c.log.Debug("embedding for an unknown task", "task", m.Task)
					continue
				}
				if !t.abandoned {
					t.embed <- m
				}
				delete(tasks, m.Task)
			}
		case r := <-c.register:
			switch {
			case r.task == "" && (loaded || load != nil):
				r.reply <- fault.Errorf(fault.ClassConflict, "runner: the runner was already asked to load")
			case r.task == "":
				load, loaded, stage = r.load, true, r.stage
				r.reply <- nil
			case tasks[r.task] != nil:
				r.reply <- fmt.Errorf("%w: %q", ErrDuplicateTask, r.task)
			default:
				tasks[r.task] = &inflight{stream: r.stream, embed: r.embed}
				r.reply <- nil
			}
		case f := <-c.forget:
			t, ok := tasks[f.task]
			if !ok {
				continue
			}
			if !f.cancel {
				delete(tasks, f.task)
				continue
			}
			t.abandoned = true
			if line, err := proto.MarshalLine(proto.Command{Op: proto.OpCancel, Cancel: &proto.CancelCmd{Task: f.task}}); err == nil {
				select {
				case c.lines <- line:
				default:
					// The writer is backed up; the task runs to its end.
					c.log.Warn("could not queue a cancel", "task", f.task)
				}
			}
		case <-procDone:
			procDone = nil
			c.exit = c.proc.Exit()
		}
	}
	// The runner is gone and its output read to the end.
	reason := "runner exited: " + c.exit.String()
	if c.stall != nil {
		reason = c.stall.Error() + " (" + c.exit.String() + ")"
	}
	for id, t := range tasks {
		if !t.abandoned {
			t.fail(id, fault.Errorf(fault.ClassInternal, "%s", reason))
		}
		delete(tasks, id)
	}
	final := proto.Status{State: proto.StateFailed, Reason: reason}
	if last != nil && last.State == proto.StateStopped && c.exit.Success() {
		final = proto.Status{State: proto.StateStopped, Reason: reason}
	}
	c.log.Info("runner exited", "exit", c.exit.String(), "state", final.State)
	if load != nil {
		load <- final
		close(load)
	} else {
		c.status(final)
	}
	close(c.statuses)
}

// status delivers st to Statuses without ever blocking run.
func (c *Client) status(st proto.Status) {
	select {
	case c.statuses <- st:
	default:
		c.log.Warn("status dropped: nobody reads Statuses", "state", st.State)
	}
}

// stream carries one task's chunks from run to the caller through an
// unbounded queue, so a slow caller never blocks run or other tasks.
type stream struct {
	ctx  context.Context // the caller's; immutable
	out  chan request.Chunk
	wake chan struct{} // capacity 1: chunks were queued

	mu  sync.Mutex
	buf []request.Chunk // guarded by mu
}

func (s *stream) push(c request.Chunk) {
	s.mu.Lock()
	s.buf = append(s.buf, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) take() []request.Chunk {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buf
	s.buf = nil
	return b
}

// pump delivers task's chunks to its caller until the terminal chunk, the
// end of the caller's ctx (then the runner is told to cancel) or Close.
func (c *Client) pump(task string, s *stream) {
	defer close(s.out)
	for {
		for _, ch := range s.take() {
			select {
			case s.out <- ch:
			case <-s.ctx.Done():
				c.drop(task, true)
				return
			case <-c.quit:
				return
			}
			if ch.Kind == request.ChunkDone || ch.Kind == request.ChunkError {
				return
			}
		}
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			c.drop(task, true)
			return
		case <-c.quit:
			return
		}
	}
}
