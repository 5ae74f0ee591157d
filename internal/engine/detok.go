package engine

import (
	"strings"
	"unicode/utf8"

	"github.com/skulk/skulk/internal/engine/tokenizer"
)

// detok turns a stream of ids into text as llama.cpp streams it (each
// token's piece, byte tokens as raw bytes) without ever splitting a UTF-8
// character: an incomplete trailing sequence is held until it completes.
type detok struct {
	tok     *tokenizer.Tokenizer
	pending []byte
}

func newDetok(t *tokenizer.Tokenizer) *detok { return &detok{tok: t} }

func (d *detok) push(id int32) string {
	d.pending = append(d.pending, d.tok.Piece(id, false)...)
	// Hold back a trailing sequence that is the start of a character.
	cut := len(d.pending)
	for i := len(d.pending) - 1; i >= 0 && i >= len(d.pending)-utf8.UTFMax; i-- {
		if utf8.RuneStart(d.pending[i]) {
			if !utf8.FullRune(d.pending[i:]) {
				cut = i
			}
			break
		}
	}
	out := strings.ToValidUTF8(string(d.pending[:cut]), "\uFFFD")
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

func (d *detok) flush() string {
	out := strings.ToValidUTF8(string(d.pending), "\uFFFD")
	d.pending = d.pending[:0]
	return out
}
