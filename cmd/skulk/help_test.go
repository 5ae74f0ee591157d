package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// cleanEnv unsets the environment that changes flag defaults (SKULK_*,
// XDG_*) and fixes HOME, so help output is the same on every machine.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "SKULK_") || strings.HasPrefix(k, "XDG_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("HOME", "/home/you")
}

// TestHelpGolden compares each main command's --help with
// testdata/help/*.golden; go test -run TestHelpGolden -update rewrites them.
func TestHelpGolden(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		{}, {"run"}, {"serve"}, {"chat"}, {"ps"}, {"place"}, {"stop"},
		{"models"}, {"models", "list"}, {"models", "add"}, {"list"}, {"pull"}, {"show"}, {"rm"},
		{"nodes"}, {"cluster", "invite"}, {"cluster", "recover"}, {"keys"}, {"keys", "add"}, {"keys", "list"}, {"keys", "rm"}, {"trace"}, {"trace", "show"}, {"tokenize"}, {"generate"}, {"bench"}, {"dev"}, {"version"},
	} {
		name := strings.Join(append([]string{"skulk"}, args...), "_")
		t.Run(name, func(t *testing.T) {
			code, out, errs := runCLI(t, append(args, "--help")...)
			if code != 0 || errs != "" {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			path := filepath.Join("testdata", "help", name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestHelpGolden -update to write it)", err)
			}
			if out != string(want) {
				t.Errorf("skulk %s --help differs from %s (go test -run TestHelpGolden -update rewrites it):\n%s",
					strings.Join(args, " "), path, out)
			}
		})
	}
}

// TestEveryCommandHasHelp: every command has a summary and examples.
func TestEveryCommandHasHelp(t *testing.T) {
	root := newRootCmd(stdio{strings.NewReader(""), &strings.Builder{}, &strings.Builder{}})
	root.InitDefaultCompletionCmd()
	stack := root.Commands()
	for len(stack) > 0 {
		c := stack[0]
		stack = append(stack[1:], c.Commands()...)
		if c.Hidden || c.Name() == "help" || c.Parent().Name() == "completion" || c.Name() == "completion" {
			continue
		}
		if c.Short == "" || c.Example == "" {
			t.Errorf("%s: want a summary and examples", c.CommandPath())
		}
	}
}
