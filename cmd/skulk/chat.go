package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skulk/skulk/internal/serving/request"
)

// defaultReplyTokens caps a chat reply unless --max-tokens says otherwise
// (the dashboard's chat sends the same, from its self frame).
const defaultReplyTokens = request.ChatReplyTokens

// chatOptions are the flags of skulk chat and skulk run MODEL.
type chatOptions struct {
	host        string
	system      string
	maxTokens   int
	temperature float64
	tempSet     bool // --temperature was given
	verbose     bool
	keyFile     keyFile // --api-key-file
}

func (o *chatOptions) register(c *cobra.Command) {
	addHostFlag(c, &o.host)
	f := c.Flags()
	f.StringVar(&o.system, "system", "", "system message")
	f.IntVar(&o.maxTokens, "max-tokens", defaultReplyTokens, "most tokens per reply (0 = up to the context window)")
	f.Float64Var(&o.temperature, "temperature", 0, fmt.Sprintf("sampling temperature (default: the node's, %g)", request.DefaultTemperature))
	f.BoolVar(&o.verbose, "verbose", false, "after each reply, print the time to first token, tokens per second and the trace id")
}

func (o *chatOptions) check(cmd *cobra.Command) error {
	o.tempSet = cmd.Flags().Changed("temperature")
	o.keyFile = keyFileOf(cmd)
	if o.maxTokens < 0 {
		return usageErrorf("--max-tokens must not be negative")
	}
	if o.tempSet && o.temperature < 0 {
		return usageErrorf("--temperature must not be negative")
	}
	return nil
}

const chatExample = `  skulk chat stories260k
  skulk chat stories260k --system "Tell short stories." --verbose
  skulk chat stories260k --host 10.0.0.5:52415`

func newChatCmd(s stdio) *cobra.Command {
	var opts chatOptions
	c := &cobra.Command{
		Use:   "chat MODEL",
		Short: "Chat with a model in the terminal (places it if needed)",
		Long: `Chat with a model in the terminal, placing it on the cluster first when no
instance serves it. Each line is a turn; /help lists the chat commands (/clear,
/set system …, /set temperature …, """ for several lines, /bye). When the
conversation outgrows the context window, the oldest turns are dropped, and said
so. Ctrl-C stops a reply; Ctrl-D or /bye leaves.`,
		Example:           chatExample,
		Args:              exactArgs(1),
		ValidArgsFunction: completeModels,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.check(cmd); err != nil {
				return err
			}
			return chatLoop(cmd.Context(), s, opts, args[0])
		},
	}
	opts.register(c)
	return c
}

// runModel is skulk run MODEL [PROMPT]: one answer when there is a prompt
// or standard input is not a terminal, else a chat.
func runModel(cmd *cobra.Command, s stdio, opts chatOptions, model, prompt string) error {
	if err := opts.check(cmd); err != nil {
		return err
	}
	if err := offerNode(cmd.Context(), s, clientWith(opts.host, opts.keyFile)); err != nil {
		return err
	}
	if prompt == "" && isTerminal(s.in) {
		return chatLoop(cmd.Context(), s, opts, model)
	}
	if !isTerminal(s.in) {
		b, err := io.ReadAll(io.LimitReader(s.in, 16<<20))
		if err != nil {
			return fmt.Errorf("reading the prompt from standard input: %w", err)
		}
		if in := strings.TrimSpace(string(b)); in != "" {
			if prompt != "" {
				prompt = in + "\n\n" + prompt
			} else {
				prompt = in
			}
		}
	}
	if prompt == "" {
		// Nothing to say (an empty pipe): place the model, as Ollama loads
		// it, and end as a chat does at the end of its input.
		return chatLoop(cmd.Context(), stdio{strings.NewReader(""), s.out, s.err}, opts, model)
	}
	sess, err := newChatSession(cmd.Context(), s, opts, model)
	if err != nil {
		return err
	}
	defer sess.close()
	_, err = sess.turn(prompt)
	return err
}

// isTerminal reports whether r is a terminal (a character device).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatSession is one conversation with a model: its settings, its turns,
// and the context window that bounds them.
type chatSession struct {
	ctx     context.Context // not cancelled by Ctrl-C: that is ours
	api     *apiClient
	s       stdio
	sig     chan os.Signal
	model   string
	opts    chatOptions
	history []chatMessage // user and assistant turns, in pairs
	context int           // the instance's context window (0: unknown)
}

// newChatSession places the model unless an instance serves it, showing
// the progress, and takes over Ctrl-C.
func newChatSession(ctx context.Context, s stdio, opts chatOptions, model string) (*chatSession, error) {
	c := &chatSession{ctx: context.WithoutCancel(ctx), api: clientWith(opts.host, opts.keyFile), s: s, sig: make(chan os.Signal, 1), model: model, opts: opts}
	signal.Notify(c.sig, os.Interrupt)
	id, err := resolveModel(ctx, c.api, model, s.err)
	if err != nil {
		c.close()
		return nil, err
	}
	c.model = id
	if err := c.ensurePlaced(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *chatSession) close() { signal.Stop(c.sig) }

// chatLoop is the interactive loop: it ends on /bye, end of input, or Ctrl-C
// at the prompt.
func chatLoop(ctx context.Context, s stdio, opts chatOptions, model string) error {
	c, err := newChatSession(ctx, s, opts, model)
	if err != nil {
		return err
	}
	defer c.close()
	fmt.Fprintf(s.err, "chatting with %s: /help lists the commands, /bye leaves, Ctrl-C stops a reply\n", model)
	in := bufio.NewScanner(s.in)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(s.out, ">>> ")
		line, ok := c.readLine(in)
		if !ok {
			fmt.Fprintln(s.out)
			return nil
		}
		if strings.HasPrefix(strings.TrimSpace(line), `"""`) {
			if line, ok = c.readMultiline(in, line); !ok {
				fmt.Fprintln(s.out)
				return nil
			}
		} else {
			line = strings.TrimSpace(line)
		}
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "/"):
			if c.command(line) {
				return nil
			}
			continue
		}
		if _, err := c.turn(line); err != nil {
			fmt.Fprintf(s.err, "error: %v\n", err)
		}
	}
}

// readMultiline reads a """-quoted message that began with first, up to
// the line that ends with """.
func (c *chatSession) readMultiline(in *bufio.Scanner, first string) (string, bool) {
	text := strings.TrimPrefix(strings.TrimSpace(first), `"""`)
	if strings.HasSuffix(text, `"""`) {
		return strings.TrimSpace(strings.TrimSuffix(text, `"""`)), true
	}
	lines := []string{text}
	for {
		fmt.Fprint(c.s.out, "... ")
		line, ok := c.readLine(in)
		if !ok {
			return "", false
		}
		if t := strings.TrimRight(line, " \t"); strings.HasSuffix(t, `"""`) {
			lines = append(lines, strings.TrimSuffix(t, `"""`))
			return strings.TrimSpace(strings.Join(lines, "\n")), true
		}
		lines = append(lines, line)
	}
}

const chatHelp = `chat commands:
  /set system TEXT       set the system message (/set system alone removes it)
  /set temperature T     set the sampling temperature (/set temperature alone: the node's)
  /set max-tokens N      most tokens per reply (0 = up to the context window)
  /set verbose|quiet     print, or stop printing, the speed after each reply
  /clear                 forget the conversation (the system message stays)
  /bye                   leave (Ctrl-D too)
  /help                  this list
  """                    begin a message of several lines; end it with """
`

// command runs a /command; it reports whether the chat ends.
func (c *chatSession) command(line string) bool {
	w := c.s.err
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/bye", "/exit":
		return true
	case "/help", "/?":
		fmt.Fprint(c.s.out, chatHelp)
	case "/clear":
		c.history = nil
		fmt.Fprintln(w, "cleared the conversation")
	case "/set":
		key, val, _ := strings.Cut(arg, " ")
		val = strings.TrimSpace(val)
		switch key {
		case "system":
			c.opts.system = val
			if val == "" {
				fmt.Fprintln(w, "removed the system message")
			} else {
				fmt.Fprintln(w, "set the system message")
			}
		case "temperature":
			if val == "" {
				c.opts.tempSet = false
				fmt.Fprintln(w, "the temperature is the node's default")
				break
			}
			t, err := strconv.ParseFloat(val, 64)
			if err != nil || t < 0 {
				fmt.Fprintf(w, "/set temperature takes a number ≥ 0, such as 0.7; not %q\n", val)
				break
			}
			c.opts.temperature, c.opts.tempSet = t, true
			fmt.Fprintf(w, "set the temperature to %g\n", t)
		case "max-tokens":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				fmt.Fprintf(w, "/set max-tokens takes a whole number ≥ 0; not %q\n", val)
				break
			}
			c.opts.maxTokens = n
			fmt.Fprintf(w, "set the most tokens per reply to %d\n", n)
		case "verbose":
			c.opts.verbose = true
			fmt.Fprintln(w, "verbose: the speed is printed after each reply")
		case "quiet":
			c.opts.verbose = false
			fmt.Fprintln(w, "quiet")
		default:
			fmt.Fprintf(w, "unknown setting %q: /set system, temperature, max-tokens, verbose or quiet (/help)\n", key)
		}
	default:
		fmt.Fprintf(w, "unknown command %s: /help lists the commands\n", name)
	}
	return false
}

// readLine reads one line, or reports false on end of input or Ctrl-C.
func (c *chatSession) readLine(in *bufio.Scanner) (string, bool) {
	type result struct {
		line string
		ok   bool
	}
	ch := make(chan result, 1)
	go func() {
		ok := in.Scan()
		ch <- result{in.Text(), ok}
	}()
	select {
	case r := <-ch:
		return r.line, r.ok
	case <-c.sig:
		return "", false
	}
}

// turn sends one user message with as much of the conversation as fits,
// streams the reply to standard output, and keeps both.
func (c *chatSession) turn(user string) (string, error) {
	maxTokens, err := c.fit(user)
	if err != nil {
		return "", err
	}
	msgs := c.messages(user)
	body := map[string]any{"model": c.model, "messages": msgs, "stream_options": map[string]any{"include_usage": true}}
	if maxTokens > 0 {
		body["max_tokens"] = maxTokens
	}
	if c.opts.tempSet {
		body["temperature"] = c.opts.temperature
	}
	reply, st, err := c.stream(body)
	fmt.Fprintln(c.s.out)
	if err != nil {
		return "", err
	}
	if c.opts.verbose {
		st.print(c.s.err)
	}
	if strings.TrimSpace(reply) != "" {
		c.history = append(c.history, chatMessage{"user", user}, chatMessage{"assistant", reply})
	}
	return reply, nil
}

// messages is the request's conversation: the system message, the turns,
// and the new user message.
func (c *chatSession) messages(user string) []chatMessage {
	var msgs []chatMessage
	if c.opts.system != "" {
		msgs = append(msgs, chatMessage{"system", c.opts.system})
	}
	msgs = append(msgs, c.history...)
	return append(msgs, chatMessage{"user", user})
}

// fit drops the oldest turns until the conversation and a reply of
// --max-tokens fit the context window, saying so, and returns the reply's
// token budget. A node that cannot count leaves it to the node.
func (c *chatSession) fit(user string) (int, error) {
	maxTokens := c.opts.maxTokens
	if c.context <= 0 {
		return maxTokens, nil
	}
	dropped := 0
	for {
		n, err := c.count(c.messages(user))
		if err != nil {
			return maxTokens, nil
		}
		room := c.context - n
		if maxTokens == 0 || room >= maxTokens {
			if room <= 0 {
				return 0, fmt.Errorf("the message is %d tokens with the system message, and the context window of %s is %d tokens: shorten it", n, c.model, c.context)
			}
			break
		}
		if len(c.history) == 0 {
			if room <= 0 {
				return 0, fmt.Errorf("the message is %d tokens with the system message, and the context window of %s is %d tokens: shorten it", n, c.model, c.context)
			}
			maxTokens = room
			break
		}
		c.history = c.history[2:]
		dropped++
	}
	if dropped > 0 {
		fmt.Fprintf(c.s.err, "(dropped the oldest %d %s of the conversation to fit the %d-token context window)\n", dropped, plural(dropped, "turn", "turns"), c.context)
	}
	return maxTokens, nil
}

// count is the prompt's length in tokens, as the node renders it.
func (c *chatSession) count(msgs []chatMessage) (int, error) {
	body := map[string]any{"model": c.model}
	var turns []chatMessage
	for _, m := range msgs {
		if m.Role == "system" {
			body["system"] = m.Content
			continue
		}
		turns = append(turns, m)
	}
	body["messages"] = turns
	var res struct {
		InputTokens int `json:"input_tokens"`
	}
	err := c.api.call(c.ctx, http.MethodPost, "/v1/messages/count_tokens", body, &res)
	return res.InputTokens, err
}

// replyStats are one reply's timings, for --verbose.
type replyStats struct {
	start, first, end time.Time
	prompt, tokens    int
	finish            string
	trace             string
}

func (st replyStats) print(w io.Writer) {
	if st.first.IsZero() {
		fmt.Fprintf(w, "no tokens in %.2fs\n", st.end.Sub(st.start).Seconds())
		return
	}
	gen := st.end.Sub(st.first).Seconds()
	rate := 0.0
	if gen > 0 && st.tokens > 1 {
		rate = float64(st.tokens-1) / gen
	}
	fmt.Fprintf(w, "time to first token: %.3fs\n", st.first.Sub(st.start).Seconds())
	fmt.Fprintf(w, "reply:               %d tokens in %.2fs, %.1f tokens/s (finish: %s)\n", st.tokens, st.end.Sub(st.start).Seconds(), rate, st.finish)
	fmt.Fprintf(w, "prompt:              %d tokens\n", st.prompt)
	if st.trace != "" {
		fmt.Fprintf(w, "trace:               %s ('skulk trace show %s' when tracing is on)\n", st.trace, st.trace)
	}
}

// stream streams one answer to standard output; Ctrl-C cancels the
// request and keeps what arrived.
func (c *chatSession) stream(body map[string]any) (string, replyStats, error) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-c.sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	st := replyStats{start: time.Now()}
	var reply strings.Builder
	var res streamResult
	var err error
	for wait := newRetryWait(c.s.err, time.Now()); ; {
		res, err = c.api.streamChat(ctx, body, func(content, reasoning string) {
			if st.first.IsZero() && content+reasoning != "" {
				st.first = time.Now()
			}
			fmt.Fprint(c.s.out, content)
			reply.WriteString(content)
		})
		if !wait.again(ctx, err) {
			break
		}
	}
	st.end, st.prompt, st.tokens, st.finish, st.trace = time.Now(), res.PromptTokens, res.CompletionTokens, res.Finish, res.Trace
	if errors.Is(err, context.Canceled) || (err != nil && ctx.Err() != nil) {
		fmt.Fprint(c.s.err, " [stopped]")
		return reply.String(), st, nil
	}
	return reply.String(), st, err
}

// ensurePlaced places the model unless an instance already serves it,
// showing the progress until it is ready; Ctrl-C stops waiting. It learns
// the context window the conversation must fit.
func (c *chatSession) ensurePlaced() error {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	go func() {
		select {
		case <-c.sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	st, err := c.api.state(ctx)
	if err != nil {
		return err
	}
	id := ""
	for _, i := range instancesOf(st, c.model) {
		if id == "" || st.Instances[i].Status == "ready" {
			id = i
		}
	}
	if id == "" {
		if id, err = placeModel(ctx, c.api, c.model, 0, c.s); err != nil {
			return err
		}
	} else if st.Instances[id].Status != "ready" {
		fmt.Fprintf(c.s.err, "waiting for instance %s of %s\n", id, c.model)
		if err := c.api.waitReady(ctx, id, c.model, c.s.err); err != nil {
			return err
		}
	}
	if st, err = c.api.state(ctx); err == nil {
		c.context = st.Instances[id].ContextTokens
	}
	return nil
}
