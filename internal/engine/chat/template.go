package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// ErrNoClock is returned when a template calls strftime_now and the Input
// carries no time: the package never reads the clock itself.
var ErrNoClock = errors.New("chat: template calls strftime_now but Input.Now is zero")

// ErrReservedKwarg is returned for a kwarg that would replace a render
// variable (messages, tools, documents, add_generation_prompt) or a helper.
var ErrReservedKwarg = errors.New("chat: kwarg name is reserved")

// Template is a compiled chat template. It is immutable and safe for
// concurrent use.
type Template struct {
	source    string // as given
	compiled  *jinja.Template
	macroText map[string]int64 // literal text of each macro's body; read only
}

// Parse compiles a chat template. Errors are *SyntaxError.
func Parse(source string) (t *Template, err error) {
	// A template comes from a model file; an engine panic on a malformed
	// one must not take the process down.
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, &SyntaxError{Err: fmt.Errorf("engine panic: %v", r)}
		}
	}()
	rewritten, lits, err := rewrite(source)
	if err != nil {
		return nil, &SyntaxError{Err: err}
	}
	compiled, err := jinja.Compile(rewritten)
	if err != nil {
		return nil, &SyntaxError{Err: err}
	}
	return &Template{source: source, compiled: compiled, macroText: lits.macros}, nil
}

// Source returns the template text as given to Parse.
func (t *Template) Source() string { return t.source }

// Input is one render's variables, as transformers' apply_chat_template
// passes them.
type Input struct {
	// Messages reach the template exactly as given, keys in order.
	Messages []Object
	// Tools is the tool list; nil renders as None, as when no tools are offered.
	Tools []Object
	// AddGenerationPrompt asks for the assistant turn's opening.
	AddGenerationPrompt bool
	// BOS and EOS are the special tokens; "" leaves the variable undefined,
	// as transformers leaves None tokens out of the render.
	BOS, EOS string
	// Kwargs are extra variables (enable_thinking, date_string, ...).
	Kwargs map[string]any
	// Now is the time strftime_now formats, as a naive wall-clock time.
	Now time.Time
	// Limits are the render's budgets; nil means DefaultLimits.
	Limits *Limits
}

// reserved are the render variables a kwarg may not replace.
var reserved = map[string]bool{"messages": true, "tools": true, "documents": true, "add_generation_prompt": true}

// Render applies the template to in under DefaultLimits (or in.Limits)
// and no cancellation; see RenderContext.
func (t *Template) Render(in Input) (string, error) {
	return t.RenderContext(context.Background(), in)
}

// RenderContext applies the template to in. A template's own refusal is a
// *TemplateError; a render that passes a budget of its Limits is a
// *LimitError; the end of ctx ends the render with ctx's error; a failure
// in evaluation is a *RenderError; unusable input is a *ValueError or
// ErrReservedKwarg.
func (t *Template) RenderContext(ctx context.Context, in Input) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", &RenderError{Err: fmt.Errorf("engine panic: %v", r)}
		}
	}()
	lim := DefaultLimits
	if in.Limits != nil {
		lim = *in.Limits
	}
	rctx, cancel := context.WithTimeout(ctx, lim.Time)
	defer cancel()
	b := &budget{ctx: rctx, parent: ctx, lim: lim}
	if err := b.live(); err != nil {
		return "", err
	}
	data, err := variables(in, b, t.macroText)
	if err != nil {
		return "", err
	}
	out, err = t.compiled.RenderValues(data)
	if err != nil {
		var te *TemplateError
		if errors.As(err, &te) {
			return "", te
		}
		if le, ok := asLimit(err); ok {
			return "", le
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return "", ctx.Err()
		}
		if errors.Is(err, ErrNoClock) {
			return "", ErrNoClock
		}
		return "", &RenderError{Err: err}
	}
	// The text outside loops and macros is written once; with the charges
	// above this cannot pass the budget, but the check costs nothing.
	if int64(len(out)) > lim.Output {
		return "", &LimitError{Budget: "output", Limit: lim.Output}
	}
	return out, nil
}

func variables(in Input, b *budget, macroText map[string]int64) (map[string]jinja.Value, error) {
	data := helpers(in.Now, b, macroText)
	for k, v := range in.Kwargs {
		if reserved[k] || strings.HasPrefix(k, fnPrefix) {
			return nil, fmt.Errorf("%w: %q", ErrReservedKwarg, k)
		}
		val, err := toValue(v, k)
		if err != nil {
			return nil, err
		}
		data[k] = val
	}
	msgs, err := toValue(in.Messages, "messages")
	if err != nil {
		return nil, err
	}
	data["messages"] = msgs
	data["tools"] = jinja.None()
	if in.Tools != nil {
		if data["tools"], err = toValue(in.Tools, "tools"); err != nil {
			return nil, err
		}
	}
	data["documents"] = jinja.None()
	data["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	// transformers merges the special tokens under the kwargs.
	if _, ok := in.Kwargs["bos_token"]; !ok && in.BOS != "" {
		data["bos_token"] = jinja.NewString(in.BOS)
	}
	if _, ok := in.Kwargs["eos_token"]; !ok && in.EOS != "" {
		data["eos_token"] = jinja.NewString(in.EOS)
	}
	return data, nil
}
