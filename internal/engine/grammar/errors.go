package grammar

import (
	"errors"
	"fmt"
)

// Error classes. Every *SchemaError matches exactly one of them with
// errors.Is, so an API layer can map them to a status without reading text.
var (
	// ErrInvalidSchema: the schema is not well-formed (a keyword has the
	// wrong JSON type, a $ref points nowhere, the text is not JSON).
	ErrInvalidSchema = errors.New("grammar: invalid schema")
	// ErrUnsupported: the schema is well-formed but uses a keyword or form
	// outside the supported subset (see the package doc).
	ErrUnsupported = errors.New("grammar: unsupported schema feature")
	// ErrUnsatisfiable: no JSON value matches the schema (empty enum,
	// minItems above maxItems, a required property whose schema is false).
	ErrUnsatisfiable = errors.New("grammar: unsatisfiable schema")
	// ErrTooLarge: the schema exceeds a compile limit (nesting, node count,
	// literal bytes).
	ErrTooLarge = errors.New("grammar: schema too large")
)

// SchemaError reports why a schema was refused.
type SchemaError struct {
	Class   error  // one of ErrInvalidSchema, ErrUnsupported, ErrUnsatisfiable, ErrTooLarge
	Path    string // JSON pointer of the offending subschema ("" is the root)
	Keyword string // the keyword at fault, when there is one
	Detail  string
}

func (e *SchemaError) Error() string {
	where := e.Path
	if where == "" {
		where = "/"
	}
	if e.Keyword != "" {
		return fmt.Sprintf("%v: at %s: %s: %s", e.Class, where, e.Keyword, e.Detail)
	}
	return fmt.Sprintf("%v: at %s: %s", e.Class, where, e.Detail)
}

func (e *SchemaError) Unwrap() error { return e.Class }

// Errors of the token-level Constraint.
var (
	// ErrFinished: a token was offered after an end-of-generation token.
	ErrFinished = errors.New("grammar: generation already finished")
	// ErrBadVocab: the vocabulary given to NewVocab is unusable.
	ErrBadVocab = errors.New("grammar: bad vocabulary")
)

// RejectError reports a token the grammar does not allow in the current
// state. The Constraint's state is unchanged.
type RejectError struct {
	ID     int32
	Piece  string
	Offset int // byte offset inside Piece of the first byte refused; -1 for an EOG token before the value is complete, or an id outside the vocabulary
}

func (e *RejectError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("grammar: token %d (%q) not allowed here", e.ID, e.Piece)
	}
	return fmt.Sprintf("grammar: token %d (%q) not allowed: byte %d refused", e.ID, e.Piece, e.Offset)
}
