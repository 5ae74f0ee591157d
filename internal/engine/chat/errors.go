package chat

import "fmt"

// SyntaxError reports a template that does not compile.
type SyntaxError struct {
	Err error
}

func (e *SyntaxError) Error() string { return "chat: template syntax: " + e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// TemplateError is an exception the template raised itself, through
// raise_exception: the template refuses this conversation (for example,
// roles that do not alternate). Message is the template's text.
type TemplateError struct {
	Message string
}

func (e *TemplateError) Error() string { return "chat: template refused: " + e.Message }

// RenderError reports a render that failed in evaluation, where Python would
// raise TypeError or UndefinedError: the template and the input do not fit
// (None added to a string, None iterated).
type RenderError struct {
	Err error
}

func (e *RenderError) Error() string { return "chat: render: " + e.Err.Error() }
func (e *RenderError) Unwrap() error { return e.Err }

// pyError is a Python exception raised by a helper, carrying Python's name
// and message so that errors read like transformers' own.
type pyError struct {
	Type string // TypeError, UndefinedError
	Msg  string
}

func (e *pyError) Error() string { return e.Type + ": " + e.Msg }

func typeErrorf(format string, args ...any) error {
	return &pyError{Type: "TypeError", Msg: fmt.Sprintf(format, args...)}
}
