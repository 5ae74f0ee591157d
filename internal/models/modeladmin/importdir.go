package modeladmin

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/skulk/skulk/internal/platform/fault"
)

// ImportPathError refuses a POST /models/import path that is not a file
// under the import directories. Its answer depends on the path's text
// alone, never on whether the path exists or what it is, so the route
// cannot be used to probe the node's file system.
type ImportPathError struct {
	Path string // as the client sent it
}

func (e *ImportPathError) Error() string {
	return fmt.Sprintf("no importable file at %s on the node's machine: not found, or outside the node's import directories (put the file in one, or start the node with --import-dir DIR; its log lists them)", fault.Quote(e.Path))
}

func (e *ImportPathError) HTTPStatus() int { return http.StatusNotFound }

// resolveImport returns the absolute, symlink-free path of the file at path
// when it lies strictly under one of dirs, also after resolving symbolic
// links (a link inside a directory that points outside is refused).
// Otherwise it fails with *ImportPathError, the same for every path outside,
// whether it exists or not.
//
// A path not even lexically under a directory (as given or resolved) is
// refused before the file system is touched; only then are its links
// resolved, and a path that cannot be (it does not exist) is refused too.
func resolveImport(path string, dirs []string) (string, error) {
	refuse := &ImportPathError{Path: path}
	if !filepath.IsAbs(path) {
		return "", refuse
	}
	p := filepath.Clean(path)
	var resolved []string
	lexical := false
	for _, dir := range dirs {
		d, err := filepath.Abs(dir)
		if err != nil {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue // a missing directory holds nothing to import
		}
		resolved = append(resolved, real)
		lexical = lexical || within(d, p) || within(real, p)
	}
	if !lexical {
		return "", refuse
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", refuse
	}
	for _, d := range resolved {
		if within(d, real) {
			return real, nil
		}
	}
	return "", refuse
}

// within reports whether the clean absolute path p lies strictly under the
// clean absolute directory dir.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
