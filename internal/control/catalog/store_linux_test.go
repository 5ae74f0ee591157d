//go:build linux

package catalog

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/vfs"
	"github.com/skulk/skulk/internal/testkit"
)

// TestImportOnFullDisk imports a model into a models directory on a real
// tmpfs too small for it: the error names the disk, its free bytes and the
// import that needed them, says 507, and leaves nothing behind.
func TestImportOnFullDisk(t *testing.T) {
	root := testkit.TmpFS(t, "256k")
	s := NewStore(StoreConfig{ModelsDir: filepath.Join(root, "models"), CustomDir: filepath.Join(root, "custom_model_cards")})
	_, err := s.Import(t.Context(), "stories-local", storiesPath)
	var ns *vfs.NoSpaceError
	if !errors.As(err, &ns) || ns.HTTPStatus() != 507 || !strings.HasPrefix(ns.Path, root) || ns.Free > 64<<10 ||
		!strings.Contains(ns.What, "importing model stories-local") {
		t.Fatalf("import onto a full disk: %v", err)
	}
	if !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), root) {
		t.Fatalf("the message does not name the disk: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(root, "models", ".skulk", "import", "*"))
	if len(left) != 0 {
		t.Fatalf("staging left behind: %v", left)
	}
}
