package output

import (
	"errors"
	"fmt"
)

// Config configures a Parser for one generation.
type Config struct {
	// Dialect is the model family's tool-call format.
	Dialect Dialect
	// OfferedTools names the tools the request offered. A call to any
	// other name is delivered as content. With none offered no calls are
	// parsed, and tool-call markers of every dialect are scrubbed.
	OfferedTools []string
	// ReasoningEnabled splits a leading <think>…</think> block (for the
	// Mistral dialect, [THINK]…[/THINK] too) into Reasoning events; when
	// false, think tags are ordinary text.
	ReasoningEnabled bool
	// StartInReasoning says the prompt already opened the think block (as
	// DeepSeek-R1's template does), so output begins as reasoning. It
	// implies ReasoningEnabled.
	StartInReasoning bool
	// NewID makes the id of the call at index; nil gives "call_<index>".
	NewID func(index int) string
}

// ErrConfig is matched (errors.Is) by every error NewParser returns.
var ErrConfig = errors.New("output: invalid parser config")

// Parser turns streamed answer text into content, reasoning and tool-call
// events. Events from Push and Close, concatenated, are the same (after
// Coalesce) however the text was chunked.
type Parser struct {
	harmony *harmonySplitter // set for the Harmony dialect, which replaces both stages
	think   thinkSplitter
	tools   toolStage
	closed  bool
	out     []Event
	emit    func(Kind, string)
}

// NewParser returns a Parser for cfg.
func NewParser(cfg Config) (*Parser, error) {
	if cfg.Dialect > Kimi {
		return nil, fmt.Errorf("%w: dialect %v; use one of none, hermes, qwen3_coder, llama3, mistral, harmony, deepseek, kimi", ErrConfig, cfg.Dialect)
	}
	tools := toolSet{}
	for _, name := range cfg.OfferedTools {
		if name == "" {
			return nil, fmt.Errorf("%w: an offered tool has an empty name", ErrConfig)
		}
		tools[name] = struct{}{}
	}
	if cfg.Dialect == Harmony {
		// Harmony's channels say what is reasoning whatever the flags; with
		// no tools offered a call's body is delivered as content.
		h := newHarmonySplitter(tools, cfg.NewID)
		return &Parser{harmony: &h}, nil
	}
	d := cfg.Dialect
	if len(tools) == 0 {
		d = NoDialect
	}
	p := &Parser{
		think: newThinkSplitter(cfg.ReasoningEnabled, cfg.StartInReasoning, thinkTagsOf(cfg.Dialect)),
		tools: newToolStage(d, tools, cfg.NewID),
	}
	p.emit = p.route
	return p, nil
}

// route sends reasoning straight out and answer text through the tool stage.
func (p *Parser) route(k Kind, s string) {
	if k == Reasoning {
		p.out = appendText(p.out, Reasoning, s)
		return
	}
	p.out = p.tools.push(s, false, p.out)
}

// Push feeds the next chunk of generated text and returns the events it
// decides. After Close it returns nil.
func (p *Parser) Push(chunk string) []Event {
	if p.closed {
		return nil
	}
	if p.harmony != nil {
		p.out = p.harmony.push(chunk, false, p.out)
		return p.take()
	}
	p.think.push(chunk, false, p.emit)
	return p.take()
}

// Close ends the text: whatever was held is decided (an unfinished call
// block is parsed as it stands, else delivered as content).
func (p *Parser) Close() []Event {
	if p.closed {
		return nil
	}
	p.closed = true
	if p.harmony != nil {
		p.out = p.harmony.push("", true, p.out)
		return p.take()
	}
	p.think.push("", true, p.emit)
	p.out = p.tools.push("", true, p.out)
	return p.take()
}

func (p *Parser) take() []Event {
	out := p.out
	p.out = nil
	return out
}
