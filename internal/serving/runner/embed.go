package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/skulk/skulk/internal/engine/encoder"
	"github.com/skulk/skulk/internal/engine/gguf"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// Embedding models. A GGUF whose general.architecture is encoderArch loads
// as an encoder (package encoder) rather than a decoder; the runner then
// serves embed commands and refuses generate commands:
//
//	→ {"op":"embed","embed":{"task":"t1","request":<request.EmbedRequest>}}
//	← {"type":"embedding","task":"t1","embedding":<request.EmbedResult>}
//	← {"type":"embedding","task":"t1","error":<fault.Error>}
//
// An embed task is answered with exactly one embedding message, which
// carries the result or the error and ends the task. Embed tasks share the
// runner's slots and queue with generate tasks (a runner serves only one
// kind), and cancel works on them as on generate tasks: the answer is an
// error of class cancelled. A decoder answers every embed command with an
// invalid_request error, an encoder every generate command with an
// invalid_request error chunk.

// encoderArch is the architecture that loads as an encoder.
const encoderArch = "bert"

// errNoEmbeddings is the answer of a decoder to an embed command.
const errNoEmbeddings = "this model does not produce embeddings"

// encoderModel is a loaded embedding model.
type encoderModel struct {
	f           *gguf.File
	e           *encoder.Encoder
	name        string // for messages: general.name, or the file's name
	weightBytes int64
}

// openEncoder loads spec's model as an encoder when its architecture is
// encoderArch; ok is false (and nothing is loaded) for any other.
func openEncoder(spec proto.LoadSpec, kernels string, log *slog.Logger, warming func()) (l *loaded, ok bool, err error) {
	f, err := gguf.Open(spec.ModelPath)
	if err != nil {
		return nil, true, fmt.Errorf("runner: load: %w", err)
	}
	if f.Architecture() != encoderArch {
		f.Close()
		return nil, false, nil
	}
	e, err := encoder.Open(f, encoder.Options{Threads: spec.Threads, Kernels: kernels})
	if err != nil {
		f.Close()
		return nil, true, fmt.Errorf("runner: load: %s: %w", spec.ModelPath, err)
	}
	// An encoder runs whole: blocks [0, 0), or every block on one rank.
	if n := e.Config().NLayer; !(spec.Start == 0 && (spec.End == 0 || spec.First && spec.Last && spec.End == n)) {
		f.Close()
		return nil, true, fmt.Errorf("%w (an embedding model runs whole; asked for blocks [%d, %d) of %d, first=%v last=%v)",
			ErrShardUnsupported, spec.Start, spec.End, n, spec.First, spec.Last)
	}
	if spec.ChatTemplateOverride != "" {
		log.Warn("an embedding model has no chat template; chat_template_override is ignored")
	}
	m := &encoderModel{f: f, e: e, name: modelName(f, spec.ModelPath)}
	for _, t := range f.Tensors {
		m.weightBytes += t.Size
	}
	warming()
	if err := m.warmUp(); err != nil {
		f.Close()
		return nil, true, err
	}
	return &loaded{enc: m, context: e.Config().MaxPositions}, true, nil
}

func modelName(f *gguf.File, path string) string {
	if s, ok := f.String("general.name"); ok && s != "" {
		return s
	}
	return filepath.Base(path)
}

// warmUp embeds the empty text ([CLS] [SEP]), which faults in the weights'
// first pages and proves the forward path works before the runner says
// ready.
func (m *encoderModel) warmUp() error {
	emb, err := m.e.Embed(m.e.Tokenize(""))
	if err != nil {
		return fmt.Errorf("runner: warm-up embedding: %w", err)
	}
	if n := m.e.Config().NEmbd; len(emb.Normalized) != n {
		return fmt.Errorf("runner: warm-up embedding has %d dimensions, want %d", len(emb.Normalized), n)
	}
	return nil
}

func (m *encoderModel) close() { m.f.Close() }

// refuseGenerate is the answer to a generate command; model is the name
// the request used, if any.
func (m *encoderModel) refuseGenerate(model string) *fault.Error {
	if model == "" {
		model = m.name
	}
	return fault.Errorf(fault.ClassInvalid, "model %s is an embedding model; it produces embeddings (POST /v1/embeddings), not text", model)
}

// embed computes the vectors of req, checking ctx between inputs.
func (m *encoderModel) embed(ctx context.Context, req request.EmbedRequest) (request.EmbedResult, error) {
	if err := req.Validate(); err != nil {
		return request.EmbedResult{}, err
	}
	cfg := m.e.Config()
	if req.Dimensions != 0 && req.Dimensions != cfg.NEmbd {
		return request.EmbedResult{}, fault.ParamErrorf("dimensions",
			"model %s produces %d-dimensional embeddings and cannot shorten them; send dimensions %d or leave it out", req.Model, cfg.NEmbd, cfg.NEmbd)
	}
	res := request.EmbedResult{Embeddings: make([][]float32, len(req.Inputs))}
	for i, text := range req.Inputs {
		if err := ctx.Err(); err != nil {
			return request.EmbedResult{}, err
		}
		ids := m.e.Tokenize(text)
		if len(ids) > cfg.MaxPositions {
			return request.EmbedResult{}, fault.ParamErrorf("input",
				"input[%d] is %d tokens; model %s takes at most %d", i, len(ids), req.Model, cfg.MaxPositions)
		}
		emb, err := m.e.Embed(ids)
		if ie, ok := errors.AsType[*encoder.InputError](err); ok {
			return request.EmbedResult{}, fault.ParamErrorf("input", "input[%d]: %s", i, ie.Reason)
		} else if err != nil {
			return request.EmbedResult{}, err
		}
		res.Embeddings[i] = emb.Pooled
		if req.Normalized() {
			res.Embeddings[i] = emb.Normalized
		}
		res.PromptTokens += len(ids)
	}
	return res, nil
}

// embedTask is one embed command. The server goroutine owns the struct; run
// reads only id and req.
type embedTask struct {
	id     string
	req    request.EmbedRequest
	cancel context.CancelFunc // set when it starts running
}

// known reports whether a task of either kind has id.
func (s *server) known(id string) bool {
	_, gen := s.tasks[id]
	_, emb := s.embeds[id]
	return gen || emb
}

func (s *server) embed(c proto.EmbedCmd) {
	if s.known(c.Task) {
		s.protocolError(c.Task, fault.Errorf(fault.ClassConflict, "task %q is already running", c.Task))
		return
	}
	var refuse *fault.Error
	switch {
	case s.closing:
		refuse = fault.Errorf(fault.ClassUnavailable, "the runner is shutting down")
	case s.state != proto.StateReady:
		refuse = fault.Errorf(fault.ClassUnavailable, "the runner is not ready (state %q)", s.state)
	case s.model.enc == nil:
		refuse = fault.Errorf(fault.ClassInvalid, "%s", errNoEmbeddings)
	}
	if refuse != nil {
		s.send(proto.Message{Type: proto.TypeEmbedding, Task: c.Task, Error: refuse})
		return
	}
	t := &embedTask{id: c.Task, req: c.Request}
	s.embeds[t.id] = t
	s.embedQ = append(s.embedQ, t)
	s.startQueued()
}

// startEmbeds starts queued embed tasks while slots are free.
func (s *server) startEmbeds() {
	for s.running < s.slots && len(s.embedQ) > 0 && !s.closing {
		t := s.embedQ[0]
		s.embedQ = s.embedQ[1:]
		ctx, cancel := context.WithCancel(context.Background())
		t.cancel = cancel
		s.running++
		enc, log := s.model.enc, s.log.With("task", t.id)
		go func() {
			defer cancel()
			s.out <- t.run(ctx, enc, log)
			s.embedDone <- t
		}()
	}
}

// cancelEmbed cancels embed task id and reports whether there was one.
func (s *server) cancelEmbed(id string) bool {
	t, ok := s.embeds[id]
	if !ok {
		return false
	}
	if t.cancel != nil {
		t.cancel()
		return true
	}
	for i, q := range s.embedQ {
		if q == t {
			s.embedQ = append(s.embedQ[:i], s.embedQ[i+1:]...)
			break
		}
	}
	delete(s.embeds, id)
	s.send(embedCancelled(id))
	return true
}

// shutdownEmbeds answers the queued embed tasks and cancels the running
// ones.
func (s *server) shutdownEmbeds() {
	for _, t := range s.embedQ {
		delete(s.embeds, t.id)
		s.send(embedCancelled(t.id))
	}
	s.embedQ = nil
	for _, t := range s.embeds {
		t.cancel()
	}
}

func embedCancelled(task string) proto.Message {
	return proto.Message{Type: proto.TypeEmbedding, Task: task, Error: fault.Errorf(fault.ClassCancelled, "the embedding task was cancelled")}
}

// run computes the task's answer: one embedding message.
func (t *embedTask) run(ctx context.Context, m *encoderModel, log *slog.Logger) proto.Message {
	res, err := m.embed(ctx, t.req)
	if err == nil {
		msg := proto.Message{Type: proto.TypeEmbedding, Task: t.id, Embedding: &res}
		line, merr := proto.MarshalLine(msg)
		switch {
		case merr != nil:
			err = merr
		case len(line)-1 > proto.MaxLine:
			err = &fault.Error{Class: fault.ClassTooLarge, Param: "input", Message: fmt.Sprintf(
				"the %d embeddings are %d bytes encoded, over a runner's limit of %d; send fewer inputs per request", len(res.Embeddings), len(line)-1, proto.MaxLine)}
		default:
			log.Debug("embedding done", "inputs", len(res.Embeddings), "prompt_tokens", res.PromptTokens)
			return msg
		}
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return embedCancelled(t.id)
	}
	ie, ok := errors.AsType[*fault.Error](err)
	if !ok {
		ie = fault.Errorf(fault.ClassInternal, "%v", err)
	}
	log.Warn("embedding failed", "class", ie.Class, "err", err)
	return proto.Message{Type: proto.TypeEmbedding, Task: t.id, Error: ie}
}
