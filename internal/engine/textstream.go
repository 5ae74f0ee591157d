package engine

import "github.com/skulk/skulk/internal/engine/tokenizer"

// TextStream turns generated tokens into text as Generate streams it (each
// token's piece, held back while a UTF-8 character is incomplete), for
// loops other than Generate's (a pipeline's rank 0).
type TextStream struct{ s textStream }

// NewTextStream returns an empty stream over tok's pieces, keeping the
// text of the control tokens preserved marks (GenerateParams.Preserved).
func NewTextStream(tok *tokenizer.Tokenizer, preserved []bool) *TextStream {
	return &TextStream{s: textStream{tok: tok, preserved: preserved}}
}

// Push adds a generated token and returns the text it completes.
func (t *TextStream) Push(id int32) string { return t.s.push(id) }

// Flush returns the text still held back.
func (t *TextStream) Flush() string { return t.s.flush() }
