package runner

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/sequence"
	"github.com/skulk/skulk/internal/engine/tensor"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/prompt"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// DefaultSlots is how many tasks a runner generates at once (the one place
// the default lives: a node passes its SKULK_SLOTS only when set); more
// wait in arrival order.
const DefaultSlots = 8

// serving is how a runner serves its model, from its flags.
type serving struct {
	kernels  string     // the engine's kernel cap (--kernels)
	noPack   bool       // keep weights as the file stores them (--no-pack)
	slots    int        // tasks generated at once
	explicit bool       // slots was set (else DefaultSlots, as far as the window holds them)
	prefixMB int        // the prefix cache's bound in MiB; 0 keeps none, AutoPrefixCache the window's KV
	chunk    int        // prompt tokens a step reads of one sequence; 0 reads prompts whole
	meter    *stepMeter // the batcher's step count, for the heartbeat
}

// readerGrace bounds the wait for the stdin reader at exit.
const readerGrace = time.Second

// Main is the runner child: it reads commands from stdin, writes messages to
// stdout and logs to stderr, until a shutdown command, the end of stdin or
// the end of ctx. args are the flags after "skulk runner".
func Main(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("skulk runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	slots := fs.Int("slots", DefaultSlots, "tasks generated at once; more wait in order")
	prefixMB := fs.Int("prefix-cache-mb", AutoPrefixCache, "MiB of finished sequences' KV cache kept for prompts that start the same way; 0 keeps none, -1 as much as the window's KV cache")
	chunk := fs.Int("prefill-chunk", DefaultPrefillChunk, "most prompt tokens read per step (fewer beside running sequences' decode steps, as their step times allow); 0 reads a prompt whole, stalling them")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	kernels := fs.String("kernels", "", "cap the engine's kernel set: generic, avx2 or neon (a node passes its SKULK_KERNELS); empty uses the best the CPU has")
	noPack := fs.Bool("no-pack", false, "keep weights as the file stores them, memory-mapped, instead of packing them for the kernels (a node passes SKULK_PACK=off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("runner: unexpected arguments %q", fs.Args())
	}
	switch {
	case *slots < 1:
		return fmt.Errorf("runner: --slots must be at least 1, got %d", *slots)
	case *prefixMB < AutoPrefixCache:
		return fmt.Errorf("runner: --prefix-cache-mb must be -1 (the window's KV), 0 (none) or a number of MiB, got %d", *prefixMB)
	case *chunk < 0 || *chunk > DefaultStepBudget:
		return fmt.Errorf("runner: --prefill-chunk must be between 0 and %d, got %d", DefaultStepBudget, *chunk)
	}
	if _, err := tensor.Capped(*kernels); err != nil {
		return fmt.Errorf("runner: --kernels: %w", err)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("runner: --log-level: %w", err)
	}
	// JSON records keep their level and attributes in the node's log
	// (supervise re-emits them). Durations travel as text ("1.5ms"), which
	// reads better there than JSON's nanosecond count.
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: lv, ReplaceAttr: durationText}))
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "slots" })
	return serve(ctx, stdin, stdout, log, serving{kernels: *kernels, noPack: *noPack, slots: *slots, explicit: explicit, prefixMB: *prefixMB, chunk: *chunk})
}

// heartbeat sends the runner's progress every HeartbeatInterval until stop.
// It skips a beat rather than wait when the writer is backed up: chunks
// waiting to be written are progress too.
func heartbeat(out chan<- proto.Message, meter *stepMeter, stop <-chan struct{}) {
	// The first beat goes at once, before any status: the client's
	// watchdog knows from then on that this runner beats, so a runner
	// stopped in its first quarter second is still found stalled.
	p := meter.read()
	select {
	case out <- proto.Message{Type: proto.TypeProgress, Progress: &p}:
	case <-stop:
		return
	}
	t := time.NewTicker(proto.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p := meter.read()
			select {
			case out <- proto.Message{Type: proto.TypeProgress, Progress: &p}:
			default:
			}
		case <-stop:
			return
		}
	}
}

func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// server is the child's state, owned by the goroutine running serve.
type server struct {
	log   *slog.Logger
	slots int
	opts  serving
	out   chan<- proto.Message // to the writer goroutine

	state   proto.State
	model   *loaded          // set once ready
	loading chan loadEvent   // the loader's reports; nil when no load runs
	tasks   map[string]*task // queued and running
	queue   []*task          // queued, oldest first
	running int
	done    chan *task // running tasks report here when they have sent their last chunk
	closing bool
	// stageGone is set once a pipeline stage's end was seen.
	stageGone bool

	embeds    map[string]*embedTask // embed tasks, queued and running (counted in running)
	embedQ    []*embedTask          // queued, oldest first
	embedDone chan *embedTask       // running embed tasks report here when they have answered
}

// readResult is one line read from stdin.
type readResult struct {
	cmd proto.Command
	err error // a *ProtocolError for a bad line; anything else ends the input
}

func serve(ctx context.Context, stdin io.Reader, stdout io.Writer, log *slog.Logger, opts serving) error {
	out := make(chan proto.Message, 64)
	writeErr := make(chan error, 1)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		writeLoop(stdout, out, writeErr)
	}()
	lines := make(chan readResult)
	stopRead := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		readLoop(stdin, lines, stopRead)
	}()

	opts.meter = &stepMeter{}
	s := &server{log: log, slots: opts.slots, opts: opts, out: out, tasks: map[string]*task{}, done: make(chan *task),
		embeds: map[string]*embedTask{}, embedDone: make(chan *embedTask)}
	stopBeat, beatDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(beatDone); heartbeat(out, opts.meter, stopBeat) }()
	s.loop(ctx, lines, writeErr)
	close(stopBeat)
	<-beatDone

	s.send(proto.Message{Type: proto.TypeStatus, Status: &proto.Status{State: proto.StateStopped, Reason: "shut down"}})
	close(out)
	<-writerDone
	if s.model != nil {
		s.model.close()
	}
	close(stopRead)
	// The reader ends at its next line or at the end of input (the Client
	// closes our stdin after shutdown). Closing stdin interrupts a read only
	// on a pollable file, so the wait is bounded; the process exit ends the
	// reader in any case.
	if c, ok := stdin.(io.Closer); ok {
		c.Close()
	}
	t := time.NewTimer(readerGrace)
	defer t.Stop()
	select {
	case <-readerDone:
	case <-t.C:
		log.Warn("stdin reader still blocked at exit")
	}
	return nil
}

// loop runs until shutdown has been asked for and every task and load has
// ended.
func (s *server) loop(ctx context.Context, lines <-chan readResult, writeErr <-chan error) {
	ctxDone := ctx.Done()
	for !s.closing || s.running > 0 || s.loading != nil {
		select {
		case r, ok := <-lines:
			switch {
			case !ok:
				lines = nil
				s.shutdown("end of input")
			case r.err != nil:
				s.protocolError("", r.err)
			default:
				s.handle(r.cmd)
			}
		case ev := <-s.loading:
			s.loadEvent(ev)
		case t := <-s.done:
			delete(s.tasks, t.id)
			s.running--
			s.startQueued()
		case t := <-s.embedDone:
			delete(s.embeds, t.id)
			s.running--
			s.startQueued()
		case <-s.stageDone():
			err := s.model.stage.stage.Err()
			s.log.Error("pipeline stage stopped; shutting down", "err", err)
			if !s.closing {
				s.status(proto.Status{State: proto.StateFailed, Reason: fmt.Sprintf("pipeline stage stopped: %v", err)})
			}
			s.shutdown("pipeline stage stopped")
			s.stageGone = true
		case err := <-writeErr:
			s.log.Error("stdout failed; shutting down", "err", err)
			s.shutdown("stdout failed")
		case <-ctxDone:
			ctxDone = nil
			s.shutdown("context ended")
		}
	}
}

// stageDone is the pipeline stage's end, nil when there is none to watch.
func (s *server) stageDone() <-chan struct{} {
	if s.model == nil || s.model.stage == nil || s.stageGone {
		return nil
	}
	return s.model.stage.stage.Done()
}

func (s *server) handle(c proto.Command) {
	switch c.Op {
	case proto.OpLoad:
		s.load(*c.Load)
	case proto.OpGenerate:
		s.generate(*c.Generate)
	case proto.OpCancel:
		s.cancel(c.Cancel.Task)
	case proto.OpEmbed:
		s.embed(*c.Embed)
	case proto.OpShutdown:
		s.shutdown("shutdown requested")
	}
}

func (s *server) protocolError(task string, err error) {
	s.log.Warn("bad command", "task", task, "err", err)
	e := fault.Errorf(fault.ClassInvalid, "%v", err)
	var ie *fault.Error
	if errors.As(err, &ie) {
		e = ie
	}
	s.send(proto.Message{Type: proto.TypeError, Task: task, Error: e})
}

func (s *server) send(m proto.Message) { s.out <- m }

func (s *server) status(st proto.Status) {
	s.state = st.State
	s.log.Info("status", "state", st.State, "reason", st.Reason)
	s.send(proto.Message{Type: proto.TypeStatus, Status: &st})
}

func (s *server) load(spec proto.LoadSpec) {
	if s.closing {
		s.protocolError("", fault.Errorf(fault.ClassUnavailable, "the runner is shutting down"))
		return
	}
	if s.state != "" {
		s.protocolError("", fault.Errorf(fault.ClassConflict, "a load was already received (state %s)", s.state))
		return
	}
	s.status(proto.Status{State: proto.StateLoading})
	ch := make(chan loadEvent)
	s.loading = ch
	go loadModel(spec, s.opts, s.log, ch)
}

func (s *server) loadEvent(ev loadEvent) {
	switch {
	case ev.warming:
		s.status(proto.Status{State: proto.StateWarming})
		return
	case ev.err != nil:
		s.status(proto.Status{State: proto.StateFailed, Reason: ev.err.Error()})
	case s.closing:
		ev.model.close()
	default:
		s.model = ev.model
		if ev.model.slots > 0 {
			s.slots = ev.model.slots
		}
		s.status(proto.Status{State: proto.StateReady, WeightBytes: ev.model.weightBytes(), ContextTokens: ev.model.context,
			BytesPerToken: ev.model.bytesPerToken()})
	}
	s.loading = nil
}

func (s *server) generate(g proto.GenerateCmd) {
	if s.known(g.Task) {
		s.protocolError(g.Task, fault.Errorf(fault.ClassConflict, "task %q is already running", g.Task))
		return
	}
	var refuse *fault.Error
	switch {
	case s.closing:
		refuse = fault.Errorf(fault.ClassUnavailable, "the runner is shutting down")
	case s.state != proto.StateReady:
		refuse = fault.Errorf(fault.ClassUnavailable, "the runner is not ready (state %q)", s.state)
	case s.model.enc != nil:
		refuse = s.model.enc.refuseGenerate(g.Request.Model)
	case s.model.stage != nil && !s.model.stage.first:
		refuse = fault.Errorf(fault.ClassInvalid, "this runner is a later stage of a pipeline; tasks go to rank 0")
	}
	if refuse != nil {
		s.send(proto.Message{Type: proto.TypeChunk, Task: g.Task, Chunk: &request.Chunk{Kind: request.ChunkError, Error: refuse}})
		return
	}
	t := &task{id: g.Task, req: g.Request}
	s.tasks[t.id] = t
	s.queue = append(s.queue, t)
	s.startQueued()
}

// startQueued starts queued tasks while slots are free.
func (s *server) startQueued() {
	for s.running < s.slots && len(s.queue) > 0 && !s.closing {
		t := s.queue[0]
		s.queue = s.queue[1:]
		ctx, cancel := context.WithCancel(context.Background())
		t.cancel = cancel
		s.running++
		go func() {
			defer cancel()
			t.run(ctx, s.model, s.log.With("task", t.id), s.out)
			s.done <- t
		}()
	}
	s.startEmbeds()
}

func (s *server) cancel(id string) {
	if s.cancelEmbed(id) {
		return
	}
	t, ok := s.tasks[id]
	if !ok {
		return // finished already, or never known
	}
	if t.cancel != nil {
		t.cancel()
		return
	}
	for i, q := range s.queue {
		if q == t {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	delete(s.tasks, id)
	s.send(cancelledChunk(id, request.Usage{}))
}

// shutdown cancels every task; loop returns once they have ended.
func (s *server) shutdown(why string) {
	if s.closing {
		return
	}
	s.log.Info("shutting down", "reason", why)
	s.closing = true
	for _, t := range s.queue {
		delete(s.tasks, t.id)
		s.send(cancelledChunk(t.id, request.Usage{}))
	}
	s.queue = nil
	for _, t := range s.tasks {
		t.cancel()
	}
	s.shutdownEmbeds()
}

func cancelledChunk(task string, u request.Usage) proto.Message {
	return proto.Message{Type: proto.TypeChunk, Task: task, Chunk: &request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishCancelled, Usage: &u}}
}

// readLoop decodes stdin lines until the input ends or stop is closed.
func readLoop(r io.Reader, lines chan<- readResult, stop <-chan struct{}) {
	defer close(lines)
	lr := proto.NewLineReader(r, proto.MaxLine)
	for {
		line, err := lr.Next()
		var res readResult
		switch {
		case err != nil && errors.Is(err, proto.ErrProtocol):
			res.err = err
		case err != nil:
			return
		case len(line) == 0:
			continue // blank lines are allowed
		default:
			res.cmd, res.err = proto.DecodeCommand(line)
		}
		select {
		case lines <- res:
		case <-stop:
			return
		}
	}
}

// writeLoop writes each message as a line, flushing whenever no more are
// waiting. After a write error it keeps draining (so senders never block),
// reports the error once and writes nothing more.
func writeLoop(w io.Writer, out <-chan proto.Message, failed chan<- error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	var werr error
	for m := range out {
		if werr != nil {
			continue
		}
		b, err := proto.MarshalLine(m)
		if err != nil {
			// Only a bug can make a Message unencodable; say so rather
			// than lose the line.
			b, _ = proto.MarshalLine(proto.Message{Type: proto.TypeError, Task: m.Task, Error: fault.Errorf(fault.ClassInternal, "runner: encode message: %v", err)})
		}
		_, werr = bw.Write(b)
		if werr == nil && len(out) == 0 {
			werr = bw.Flush()
		}
		if werr != nil {
			failed <- werr
		}
	}
	if werr == nil {
		bw.Flush()
	}
}

// loaded is a model ready to serve: a decoder (m) or an encoder (enc).
type loaded struct {
	m *engine.Model
	// seqs runs the tasks' sequences: local for a model held whole, the
	// stage on a pipeline's rank 0 (nil on its later ranks, which take no
	// tasks).
	seqs    sequence.Sequencer
	local   *local // set for a model held whole
	slots   int    // tasks generated at once; 0 keeps the flag's
	enc     *encoderModel
	stage   *stageRun     // set when the runner is one stage of a pipeline
	context int           // tokens per task, prompt included
	prompts *prompt.Model // how requests are prepared for m
}

func (l *loaded) close() {
	if l.enc != nil {
		l.enc.close()
		return
	}
	if l.stage != nil {
		l.stage.close()
		l.m.Close()
		return
	}
	l.local.close()
	l.m.Close()
}

// bytesPerToken is the prompt bound the node may check (0: none; an
// encoder's prompts are short and bounded by the body limit).
func (l *loaded) bytesPerToken() int {
	if l.enc != nil || l.m == nil || l.m.Tok == nil {
		return 0
	}
	return l.m.Tok.BytesPerToken()
}

func (l *loaded) weightBytes() int64 {
	if l.enc != nil {
		return l.enc.weightBytes
	}
	return l.m.Shard.WeightBytes()
}
