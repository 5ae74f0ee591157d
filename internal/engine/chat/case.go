package chat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrBadCase reports a case object that cannot be rendered as given.
var ErrBadCase = errors.New("chat: bad case")

// caseTimeLayout is the naive timestamp the reference cases carry.
const caseTimeLayout = "2006-01-02T15:04:05"

// Case is one reference case: which template to render and with what, in
// the shape of the entries of testdata/expected.json. Other fields of an
// entry (id, rendered, error) are ignored.
type Case struct {
	Template string
	Input    Input
}

// ParseCase decodes one case object.
func ParseCase(caseJSON []byte) (Case, error) {
	v, err := DecodeJSON(caseJSON)
	if err != nil {
		return Case{}, fmt.Errorf("%w: %w", ErrBadCase, err)
	}
	obj, ok := v.(Object)
	if !ok {
		return Case{}, fmt.Errorf("%w: want a JSON object, got %s", ErrBadCase, jsonKind(v))
	}
	var c Case
	field := func(name string) any { x, _ := obj.Get(name); return x }

	name, ok := field("template").(string)
	if !ok || name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return Case{}, fmt.Errorf("%w: template must be a file name, got %v", ErrBadCase, field("template"))
	}
	c.Template = name
	if c.Input.Messages, err = objectList(field("messages")); err != nil {
		return Case{}, fmt.Errorf("%w: messages: %w", ErrBadCase, err)
	}
	if c.Input.Tools, err = objectList(field("tools")); err != nil {
		return Case{}, fmt.Errorf("%w: tools: %w", ErrBadCase, err)
	}
	if c.Input.Tools == nil && field("tools") != nil {
		c.Input.Tools = []Object{}
	}
	gen, ok := field("add_generation_prompt").(bool)
	if !ok && field("add_generation_prompt") != nil {
		return Case{}, fmt.Errorf("%w: add_generation_prompt must be a boolean", ErrBadCase)
	}
	c.Input.AddGenerationPrompt = gen
	for _, tok := range []struct {
		name string
		dst  *string
	}{{"bos_token", &c.Input.BOS}, {"eos_token", &c.Input.EOS}} {
		switch x := field(tok.name).(type) {
		case nil:
		case string:
			*tok.dst = x
		default:
			return Case{}, fmt.Errorf("%w: %s must be a string or null", ErrBadCase, tok.name)
		}
	}
	switch kw := field("kwargs").(type) {
	case nil:
	case Object:
		c.Input.Kwargs = make(map[string]any, len(kw))
		for _, f := range kw {
			c.Input.Kwargs[f.Key] = f.Value
		}
	default:
		return Case{}, fmt.Errorf("%w: kwargs must be an object", ErrBadCase)
	}
	switch now := field("now").(type) {
	case nil:
	case string:
		t, err := time.Parse(caseTimeLayout, now)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, now); err != nil {
				return Case{}, fmt.Errorf("%w: now: %w", ErrBadCase, err)
			}
		}
		c.Input.Now = t
	default:
		return Case{}, fmt.Errorf("%w: now must be a timestamp string", ErrBadCase)
	}
	return c, nil
}

// RenderCase renders one case object (an entry of expected.json) with the
// template file it names in templatesDir.
func RenderCase(templatesDir string, caseJSON []byte) (string, error) {
	c, err := ParseCase(caseJSON)
	if err != nil {
		return "", err
	}
	src, err := os.ReadFile(filepath.Join(templatesDir, c.Template))
	if err != nil {
		return "", fmt.Errorf("chat: read template: %w", err)
	}
	t, err := Parse(string(src))
	if err != nil {
		return "", err
	}
	return t.Render(c.Input)
}
