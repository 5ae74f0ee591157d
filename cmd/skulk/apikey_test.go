package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientKey: where a client command's key comes from, and the refusal
// of a key file others may read.
func TestClientKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := write("private", "sk-skulk-file-key\n", 0o600)
	readonly := write("readonly", "sk-skulk-readonly\n", 0o400)
	groupReadable := write("group", "sk-skulk-group\n", 0o640)
	worldReadable := write("world", "sk-skulk-world\n", 0o644)
	empty := write("empty", "", 0o600)
	twoLines := write("two", "a-key-one\nanother-one\n", 0o600)
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name        string
		kf          keyFile
		env         string
		key, source string
		err         string
	}{
		{name: "the default file", kf: keyFile{path: private}, key: "sk-skulk-file-key", source: private},
		{name: "read-only for its owner", kf: keyFile{path: readonly}, key: "sk-skulk-readonly", source: readonly},
		{name: "SKULK_API_KEY wins over the default file", kf: keyFile{path: private}, env: "env-key-123", key: "env-key-123", source: "SKULK_API_KEY"},
		{name: "a named file wins over SKULK_API_KEY", kf: keyFile{path: private, set: true}, env: "env-key-123", key: "sk-skulk-file-key", source: private},
		{name: "no default file: no key", kf: keyFile{path: missing}},
		{name: "no file at all", kf: keyFile{}},
		{name: "a named file missing", kf: keyFile{path: missing, set: true}, err: "no API key file at " + missing},
		{name: "group readable", kf: keyFile{path: groupReadable}, err: "run chmod 600 " + groupReadable},
		{name: "world readable", kf: keyFile{path: worldReadable, set: true}, err: "mode 0644"},
		{name: "empty", kf: keyFile{path: empty}, err: "is empty"},
		{name: "two lines", kf: keyFile{path: twoLines}, err: "one key alone"},
		{name: "a directory", kf: keyFile{path: dir, set: true}, err: "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, source, err := clientKey(tt.kf, func(k string) string {
				if k == "SKULK_API_KEY" {
					return tt.env
				}
				return ""
			})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %q %q %v, want an error saying %q", key, source, err, tt.err)
				}
				if strings.Contains(err.Error(), "sk-skulk-") {
					t.Fatalf("the error quotes the key: %v", err)
				}
				return
			}
			if err != nil || key != tt.key || source != tt.source {
				t.Fatalf("got %q %q %v, want %q %q", key, source, err, tt.key, tt.source)
			}
		})
	}
	if _, _, err := clientKey(keyFile{path: worldReadable}, func(string) string { return "" }); !errors.Is(err, errKeyFileMode) {
		t.Fatalf("a readable file: %v, want errKeyFileMode", err)
	}
}

// TestSaveKeyFile: a saved key is private (0600 in a 0700 directory), reads
// back, and never replaces a file.
func TestSaveKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "skulk", "api-key")
	if err := saveKeyFile(path, "sk-skulk-saved"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("saved file: %v %v, want mode 0600", st.Mode(), err)
	}
	if dst, _ := os.Stat(filepath.Dir(path)); dst.Mode().Perm() != 0o700 {
		t.Fatalf("its directory has mode %v, want 0700", dst.Mode().Perm())
	}
	if k, err := readKeyFile(path); err != nil || k != "sk-skulk-saved" {
		t.Fatalf("read back %q %v", k, err)
	}
	if err := saveKeyFile(path, "sk-skulk-other"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("replacing a key file: %v", err)
	}
	if k, _ := readKeyFile(path); k != "sk-skulk-saved" {
		t.Fatalf("the first key was replaced by %q", k)
	}
}
