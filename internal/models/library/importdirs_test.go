package library

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skulk/skulk/internal/platform/config"
)

func TestImportDirs(t *testing.T) {
	userHome := t.TempDir()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name           string
		home           string // $HOME
		flags          []string
		dirs, loopback []string // "M" stands for the models directory
	}{
		{"default", userHome, nil, []string{"M/import"}, []string{userHome}},
		{"home is the root", "/", nil, []string{"M/import"}, nil},
		{"no home", "", nil, []string{"M/import"}, nil},
		{"named dirs replace both", userHome, []string{"/srv/gguf", "rel"}, []string{"/srv/gguf", filepath.Join(cwd, "rel")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("HOME", c.home)
			models := filepath.Join(t.TempDir(), "models")
			dirs, loopback, err := ImportDirs(config.Node{ImportDirs: c.flags}, models, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, d := range c.dirs {
				if rel, ok := strings.CutPrefix(d, "M/"); ok {
					d = filepath.Join(models, rel)
				}
				want = append(want, d)
			}
			if !slices.Equal(dirs, want) || !slices.Equal(loopback, c.loopback) {
				t.Fatalf("dirs %q, loopback %q; want %q, %q", dirs, loopback, want, c.loopback)
			}
			fi, err := os.Stat(filepath.Join(models, "import"))
			switch {
			case c.flags == nil && (err != nil || fi.Mode().Perm() != 0o700):
				t.Fatalf("the default import directory: %v %v", fi, err)
			case c.flags != nil && err == nil:
				t.Fatal("named dirs, yet the default import directory was created")
			}
		})
	}
}
