package fault

import (
	"strconv"
	"unicode/utf8"
)

// Error messages repeat what a client sent (a model name, a field's value,
// a path) so the client sees what was refused; these bounds keep a client
// that sends a megabyte from getting it back, and from filling the logs.
const (
	// MaxQuoted is how many bytes of one client value a message repeats.
	MaxQuoted = 200
	// MaxMessage bounds a whole error message in bytes, whatever it is
	// built from.
	MaxMessage = 1024
)

// Clip returns s when it holds at most MaxQuoted bytes; else its first
// MaxQuoted bytes (cut at a UTF-8 boundary) followed by "…(N bytes)".
func Clip[S ~string](s S) string {
	return clip(string(s), MaxQuoted)
}

// Quote is %q of s clipped as Clip does: the value quoted with Go's
// escapes, and "…(N bytes)" after the closing quote when it was cut.
func Quote[S ~string](s S) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(string(s))
	}
	head := string(s[:utf8Boundary(string(s), MaxQuoted)])
	return strconv.Quote(head) + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Bounded returns e with its message clipped to MaxMessage bytes and its
// param to MaxQuoted: the safety net where errors are written, for the
// messages whose values no Quote caught (a wrapped parser error, say).
func (e *Error) Bounded() *Error {
	if len(e.Message) <= MaxMessage && len(e.Param) <= MaxQuoted {
		return e
	}
	c := *e
	if len(c.Message) > MaxMessage {
		// The marker counts against the bound: the message stays within it.
		marker := "…(" + strconv.Itoa(len(c.Message)) + " bytes)"
		c.Message = c.Message[:utf8Boundary(c.Message, MaxMessage-len(marker))] + marker
	}
	c.Param = clip(c.Param, MaxQuoted)
	return &c
}

// clip keeps the first n bytes of s and says how long it was.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:utf8Boundary(s, n)] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// utf8Boundary is the largest i <= n at which s can be cut without
// splitting a character; len(s) > n.
func utf8Boundary(s string, n int) int {
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.RuneStart(s[i]) {
		return n // not UTF-8 here: any cut is as good
	}
	return i
}
