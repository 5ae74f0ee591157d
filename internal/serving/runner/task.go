package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/chat"
	"github.com/skulk/skulk/internal/engine/output"
	"github.com/skulk/skulk/internal/engine/sample"
	"github.com/skulk/skulk/internal/engine/sequence"
	"github.com/skulk/skulk/internal/engine/tokenizer"
	"github.com/skulk/skulk/internal/platform/fault"
	"github.com/skulk/skulk/internal/serving/pipeline"
	"github.com/skulk/skulk/internal/serving/request"
	"github.com/skulk/skulk/internal/serving/runner/proto"
)

// task is one generate command. The server goroutine owns the struct; run
// reads only id and req.
type task struct {
	id     string
	req    request.Request
	cancel context.CancelFunc // set when it starts running
}

// run generates the task's answer and sends its chunks, ending with exactly
// one done or error chunk.
func (t *task) run(ctx context.Context, l *loaded, log *slog.Logger, out chan<- proto.Message) {
	emit := func(c request.Chunk) { out <- proto.Message{Type: proto.TypeChunk, Task: t.id, Chunk: &c} }
	start := time.Now()
	end, err := generate(ctx, l, t.req, emit)
	usage, finish := end.usage, end.finish
	switch {
	case err == nil:
		emit(request.Chunk{Kind: request.ChunkDone, FinishReason: finish, StopSequence: end.stop, Usage: &usage})
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		emit(request.Chunk{Kind: request.ChunkDone, FinishReason: request.FinishCancelled, Usage: &usage})
		finish = request.FinishCancelled
	default:
		var ie *fault.Error
		if !errors.As(err, &ie) {
			ie = fault.Errorf(fault.ClassInternal, "%v", err)
		}
		emit(request.Chunk{Kind: request.ChunkError, Error: ie})
		log.Warn("task failed", "class", ie.Class, "err", err)
		return
	}
	log.Debug("task done", "finish", finish, "prompt_tokens", usage.PromptTokens,
		"completion_tokens", usage.CompletionTokens, "took", time.Since(start))
}

// Sampling defaults for fields a request leaves unset, as llama-server sets
// them: a request with no temperature samples at 0.8 with top_p 0.95; send
// temperature 0 for greedy decoding. top_k, min_p and the penalties are
// plain numbers in request.Sampling, so their zero value is "off".
const (
	DefaultTemperature = 0.8
	DefaultTopP        = 0.95
)

// RequestParams maps a request's sampling settings to the engine loop's
// parameters, with the defaults above and request.DefaultMaxTokens; seed
// supplies the seed of a request that names none. `skulk generate` maps its
// flags through it too, so that it answers a request as a node does.
func RequestParams(s request.Sampling, seed func() uint64) engine.GenerateParams {
	return engine.GenerateParams{MaxTokens: maxTokens(s), Sample: samplingParams(s, seed)}
}

// maxTokens is a request's generation cap: its own, else the default.
func maxTokens(s request.Sampling) int {
	if s.MaxTokens == 0 {
		return request.DefaultMaxTokens
	}
	return s.MaxTokens
}

// samplingParams maps a request's sampling settings to the sampler's;
// randomSeed supplies the seed when the request has none.
func samplingParams(s request.Sampling, randomSeed func() uint64) sample.Params {
	p := sample.Params{
		Temperature:      DefaultTemperature,
		TopP:             DefaultTopP,
		TopK:             s.TopK,
		MinP:             float32(s.MinP),
		RepeatPenalty:    float32(s.RepeatPenalty),
		PresencePenalty:  float32(s.PresencePenalty),
		FrequencyPenalty: float32(s.FrequencyPenalty),
	}
	switch n := s.RepeatLastN; {
	case n == nil:
		p.RepeatLastN = request.DefaultRepeatLastN
	case *n == 0:
		// An empty window penalises nothing.
		p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty = 0, 0, 0
	default:
		p.RepeatLastN = *n
	}
	if s.Temperature != nil {
		p.Temperature = float32(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = float32(*s.TopP)
	}
	if s.Seed != nil {
		p.Seed = *s.Seed
	} else {
		p.Seed = randomSeed()
	}
	return p
}

// ending is how a generation ended: its usage, finish reason and the stop
// sequence that ended it, if one did.
type ending struct {
	usage  request.Usage
	finish string
	stop   string
}

// generate runs one request to its end and says how it ended (the usage
// counts what was done on errors too). Chunks other than the last go to
// emit. It is the one path of every task, whoever computes its tokens: it
// prepares the request (prompt, sampling, the grammar of structured
// output), runs the sequence on the loaded model's sequencer (local, or a
// pipeline's head) and streams its tokens through the streamer (text, stop
// sequences, reasoning and tool-call parsing, logprobs), then tells the
// finish reason.
func generate(ctx context.Context, l *loaded, req request.Request, emit func(request.Chunk)) (ending, error) {
	var end ending
	p, err := prepare(ctx, l, req)
	if err != nil {
		return end, err
	}
	end.usage.PromptTokens = len(p.prompt)
	if req.CountOnly {
		end.finish = request.FinishStop
		return end, nil
	}
	if err := ctx.Err(); err != nil {
		return end, err
	}
	toClient := emit
	con, emit, err := p.structured.start(l, emit)
	if err != nil {
		return end, err
	}
	// The prompt's size goes out before prompt processing, so a stream
	// that opens with it (Anthropic's message_start) can carry it.
	toClient(request.Chunk{Kind: request.ChunkDelta, Usage: &request.Usage{PromptTokens: len(p.prompt)}})
	st := newStreamer(l.m.Tok, p, p.structured.sampling(req.Sampling), emit)
	spec := sequence.Spec{Prompt: p.prompt, MaxTokens: p.params.MaxTokens, Sample: p.params.Sample, Context: l.context,
		Logprobs: st.logprobs, TopLogprobs: st.top}
	if con != nil {
		spec.Constraint, spec.ConstraintSource = con.con, p.structured.source
	}
	text := engine.NewTextStream(l.m.Tok, p.params.Preserved)
	stats, err := l.seqs.Generate(ctx, spec, func(t sequence.Token) error { return st.token(t, text.Push(t.ID)) })
	end.usage.CompletionTokens = stats.GeneratedTokens
	end.usage.CachedTokens = stats.CachedTokens
	end.usage.Timings = timingsOf(stats)
	if err != nil {
		return end, err
	}
	if tail := text.Flush(); tail != "" && !st.stop.Stopped() {
		st.push(tail) // a stop sequence it completes is told by Matched
	}
	finish := request.FinishLength
	if stats.FinishReason == sequence.FinishStop {
		finish = request.FinishStop
	}
	madeCalls := st.finish()
	if end.stop = st.stop.Matched(); end.stop != "" {
		// A stop sequence held back until the end still ends the text
		// rather than the length limit.
		finish = request.FinishStop
	}
	if madeCalls && finish == request.FinishStop {
		finish = request.FinishToolCalls
	}
	end.finish, err = con.finish(finish)
	return end, err
}

// timingsOf is a sequence's timings: cached prompt tokens are not
// evaluated, so not counted in prompt_n.
func timingsOf(s sequence.Stats) *request.Timings {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	t := request.NewTimings(s.CachedTokens, s.PromptTokens-s.CachedTokens, ms(s.Prefill), s.GeneratedTokens, ms(s.Decode))
	if s.DraftTokens > 0 {
		t.DraftN, t.DraftNAccepted = s.DraftTokens, s.DraftAccepted
	}
	return t
}

// prepared is a request turned into tokens and settings.
type prepared struct {
	prompt    []int32
	params    engine.GenerateParams // MaxTokens and Sample, from the request
	chat      bool
	parserCfg output.Config
	// structured is the grammar the answer follows (see constrain.go); nil
	// for free text.
	structured *structured
}

// prepare validates req and renders and tokenizes its prompt.
func prepare(ctx context.Context, l *loaded, req request.Request) (prepared, error) {
	var p prepared
	check := req
	if check.Model == "" {
		check.Model = "-" // the runner serves one model; the name is the gateway's business
	}
	if err := check.Validate(); err != nil {
		return p, err
	}
	if err := checkToolChoice(req); err != nil {
		return p, err
	}
	text := req.Prompt
	if req.Chat {
		rendered, cfg, err := renderChat(ctx, l, req)
		if err != nil {
			return p, err
		}
		text, p.chat, p.parserCfg = rendered, true, cfg
	}
	s, err := structure(req, p.parserCfg)
	if err != nil {
		return p, err
	}
	if s != nil {
		// The answer is the value: it ends the prompt's text and is not
		// parsed for reasoning or calls.
		text += s.prefix
		p.structured, p.chat = s, false
	}
	param := "prompt"
	if req.Chat {
		param = "messages"
	}
	// A prompt that certainly overflows the window is refused before it is
	// tokenized: tokenizing megabytes takes seconds of a runner's slot.
	if least := l.m.Tok.MinTokens(text); least >= l.context {
		return p, fault.ParamErrorf(param, "the prompt has at least %d tokens (%d bytes), but the context window is %d tokens; shorten it", least, len(text), l.context)
	}
	p.prompt = l.m.EncodePrompt(text)
	if len(p.prompt) == 0 {
		return p, fault.ParamErrorf(param, "the prompt has no tokens")
	}
	if len(p.prompt) >= l.context {
		return p, fault.ParamErrorf(param, "the prompt has %d tokens, but the context window is %d tokens", len(p.prompt), l.context)
	}
	if s != nil && l.stage != nil && len(s.source) > pipeline.MaxConstraintBytes {
		param := "json_schema"
		if s.call {
			param = "tools"
		}
		return p, fault.ParamErrorf(param, "the schema is %d bytes; a model split across nodes takes schemas up to %d bytes", len(s.source), pipeline.MaxConstraintBytes)
	}
	p.params = RequestParams(req.Sampling, randomSeed)
	if p.chat {
		p.params.Preserved = l.chat.preserved
	}
	if err := p.params.Sample.Validate(); err != nil {
		return p, fault.ParamErrorf("sampling", "%v", err)
	}
	return p, nil
}

// renderChat renders the conversation and configures the output parser.
func renderChat(ctx context.Context, l *loaded, req request.Request) (string, output.Config, error) {
	var cfg output.Config
	cs := l.chat
	if le, ok := errors.AsType[*chat.LimitError](cs.tmplErr); ok {
		return "", cfg, templateLimit(le)
	}
	if cs.tmpl == nil {
		return "", cfg, fault.Errorf(fault.ClassInternal, "the model's chat template does not compile: %v", cs.tmplErr)
	}
	msgs := make([]chat.Object, len(req.Messages))
	for i, m := range req.Messages {
		cm := chatMessage(m)
		if cs.dialect == output.Harmony {
			// gpt-oss's template reads the reasoning as "thinking", and
			// tests "in message.content", which fails on a null content.
			cm.Thinking, cm.NullContent = cm.ReasoningContent, false
		}
		msgs[i] = cm.Object()
	}
	var tools []chat.Object
	for i, t := range req.Tools {
		if req.ToolChoice.Mode == "none" {
			break // the model is not told about tools it may not call
		}
		// gpt-oss's template prints "// " + description, which fails on
		// a tool without one (the OpenAI APIs make it optional).
		o, err := chatTool(t, cs.dialect == output.Harmony)
		if err != nil {
			return "", cfg, fault.ParamErrorf("tools", "tools[%d]: %v", i, err)
		}
		tools = append(tools, o)
	}
	rendered, err := l.m.RenderChat(ctx, cs.tmpl, msgs, tools, req.TemplateKwargs, time.Now())
	if err != nil {
		if le, ok := errors.AsType[*chat.LimitError](err); ok {
			return "", cfg, templateLimit(le)
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return "", cfg, err
		}
		var te *chat.TemplateError
		if errors.As(err, &te) {
			return "", cfg, fault.ParamErrorf("messages", "the chat template refused the conversation: %s", te.Message)
		}
		return "", cfg, fault.ParamErrorf("messages", "the conversation does not fit the chat template: %v", err)
	}
	cfg = output.Config{
		Dialect:          cs.dialect,
		ReasoningEnabled: cs.reasoning,
		StartInReasoning: chat.OpensThinking(rendered),
	}
	if req.ToolChoice.Mode != "none" {
		for _, t := range req.Tools {
			cfg.OfferedTools = append(cfg.OfferedTools, t.Name)
		}
	}
	return rendered, cfg, nil
}

// templateLimit is the answer to a chat request whose template passes one
// of its render budgets: a 400 with code template_limit.
func templateLimit(le *chat.LimitError) *fault.Error {
	return &fault.Error{Class: fault.ClassInvalid, Param: "messages", Code: fault.CodeTemplateLimit,
		Message: fmt.Sprintf("the model's chat template would pass its %s budget on this conversation (%v); it may be hostile: send a raw prompt, or override the template", le.Budget, le)}
}

func chatMessage(m request.Message) chat.Message {
	cm := chat.Message{
		Role:             string(m.Role),
		Content:          m.Content,
		NullContent:      m.Content == "" && len(m.ToolCalls) > 0,
		ReasoningContent: m.ReasoningContent,
		ToolCallID:       m.ToolCallID,
		Name:             m.Name,
	}
	for _, c := range m.ToolCalls {
		var args any = c.Arguments
		if v, err := chat.DecodeJSON([]byte(c.Arguments)); err == nil {
			if o, ok := v.(chat.Object); ok {
				args = o
			}
		}
		cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	return cm
}

// chatTool gives a tool the OpenAI shape templates expect:
// {"type":"function","function":{"name","description","parameters"}};
// an empty description is left out unless describe is set.
func chatTool(t request.Tool, describe bool) (chat.Object, error) {
	fn := chat.Object{{Key: "name", Value: t.Name}}
	if t.Description != "" || describe {
		fn = append(fn, chat.Field{Key: "description", Value: t.Description})
	}
	if len(t.Parameters) > 0 {
		v, err := chat.DecodeJSON(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("parameters: %w", err)
		}
		fn = append(fn, chat.Field{Key: "parameters", Value: v})
	}
	return chat.Object{{Key: "type", Value: "function"}, {Key: "function", Value: fn}}, nil
}

// streamer turns generated tokens into chunks: text cut at stop sequences,
// split into content, reasoning and tool calls for chat requests, with
// logprobs when asked. It is owned by one task.
type streamer struct {
	tok      *tokenizer.Tokenizer
	emit     func(request.Chunk)
	stop     *output.StopMatcher
	parser   *output.Parser // nil for raw completions
	logprobs bool
	top      int
	lps      []request.TokenLogprob // not yet attached to a chunk
	calls    int
}

func newStreamer(tok *tokenizer.Tokenizer, p prepared, s request.Sampling, emit func(request.Chunk)) *streamer {
	st := &streamer{tok: tok, emit: emit, stop: output.NewStopMatcher(s.Stop), logprobs: s.Logprobs || s.TopLogprobs > 0, top: s.TopLogprobs}
	if p.chat {
		// NewParser fails only on a bad Config, which renderChat does not make.
		if parser, err := output.NewParser(p.parserCfg); err == nil {
			st.parser = parser
		}
	}
	return st
}

// token takes a generated token and the text it completes; it returns
// sequence.ErrStop when a stop sequence ends the generation.
func (s *streamer) token(t sequence.Token, text string) error {
	if s.stop.Stopped() {
		return sequence.ErrStop // only the held-back tail comes after a stop
	}
	if s.logprobs {
		s.lps = append(s.lps, s.logprobEntry(t.ID, t.Logprob, t.Top))
	}
	return s.push(text)
}

// push streams a token's text, cut at a stop sequence.
func (s *streamer) push(t string) error {
	text, stopped := s.stop.Push(t)
	s.text(text)
	if stopped {
		return sequence.ErrStop
	}
	return nil
}

// finish flushes whatever is held and reports whether any tool call was made.
func (s *streamer) finish() (madeCalls bool) {
	if !s.stop.Stopped() {
		s.text(s.stop.Flush())
	}
	if s.parser != nil {
		s.events(s.parser.Close())
	}
	if len(s.lps) > 0 {
		s.emit(request.Chunk{Kind: request.ChunkDelta, Logprobs: s.lps})
		s.lps = nil
	}
	return s.calls > 0
}

func (s *streamer) text(text string) {
	if text == "" {
		return
	}
	if s.parser == nil {
		s.delta(request.Chunk{Kind: request.ChunkDelta, Content: text})
		return
	}
	s.events(s.parser.Push(text))
}

func (s *streamer) events(evs []output.Event) {
	for _, ev := range output.Coalesce(evs) {
		switch ev.Kind {
		case output.Content:
			s.delta(request.Chunk{Kind: request.ChunkDelta, Content: ev.Text})
		case output.Reasoning:
			s.delta(request.Chunk{Kind: request.ChunkDelta, Reasoning: ev.Text})
		case output.Call:
			s.calls++
			c := ev.ToolCall
			s.emit(request.Chunk{Kind: request.ChunkToolCall, ToolCall: &request.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
		}
	}
}

// delta emits a text chunk carrying the logprobs of the tokens so far.
func (s *streamer) delta(c request.Chunk) {
	c.Logprobs, s.lps = s.lps, nil
	s.emit(c)
}

// logprobEntry is a token's logprob as the API reports it: its piece, its
// log-probability and its top alternatives'.
func (s *streamer) logprobEntry(id int32, logprob float32, top []sample.Logprob) request.TokenLogprob {
	piece := s.tok.Piece(id, false)
	lp := request.TokenLogprob{Token: piece, Bytes: []byte(piece), Logprob: finiteLogprob(logprob)}
	for _, t := range top {
		p := s.tok.Piece(t.ID, false)
		lp.Top = append(lp.Top, request.TopLogprob{Token: p, Bytes: []byte(p), Logprob: finiteLogprob(t.Logprob)})
	}
	return lp
}

// MinLogprob stands in for the log-probability of a token that cannot occur
// (-Inf, which JSON cannot carry), as OpenAI reports it.
const MinLogprob = -9999

func finiteLogprob(v float32) float32 {
	if v != v || v < MinLogprob {
		return MinLogprob
	}
	return v
}
