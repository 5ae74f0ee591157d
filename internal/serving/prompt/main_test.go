package prompt

import (
	"path/filepath"
	"testing"

	"github.com/skulk/skulk/internal/engine"
)

// modelPath is the stories260K test model.
func modelPath(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "models", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// openModel loads stories260K for preparation, with the chat template
// override when one is given.
func openModel(t testing.TB, override string) *Model {
	t.Helper()
	m, err := engine.Open(modelPath(t), engine.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	md := &Model{M: m, Context: m.Config.ContextLength}
	if md.Chat, err = SetupChat(m, override); err != nil {
		t.Fatal(err)
	}
	return md
}
