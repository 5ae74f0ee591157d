package prompt

import (
	"github.com/skulk/skulk/internal/engine"
	"github.com/skulk/skulk/internal/engine/grammar"
)

// Model is a loaded model as the requests it serves are prepared for it.
type Model struct {
	M *engine.Model
	// Chat is the model's chat setup (SetupChat); the zero Chat refuses
	// chat requests.
	Chat Chat
	// Context is a task's window, prompt included.
	Context int
	// MaxConstraintBytes bounds a structured answer's schema, which a
	// model split across nodes sends to its last rank; 0 = no bound.
	MaxConstraintBytes int
	vocab              lazyVocab // the grammar vocabulary, built on the first constrained task
}

// Constraint is the grammar of a structured answer compiled from src, the
// schema Prepare compiled (Answer's spec carries it): a pipeline's last
// rank, which samples, builds its own copy with it.
func (md *Model) Constraint(src []byte) (*grammar.Constraint, error) {
	m, err := compileSchema(src)
	if err != nil {
		return nil, err
	}
	v, err := grammarVocab(md)
	if err != nil {
		return nil, err
	}
	return grammar.NewConstraintVocab(m, v), nil
}
