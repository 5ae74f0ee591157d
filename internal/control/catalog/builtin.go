package catalog

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skulk/skulk/internal/engine/gguf"
)

// BuiltinID is the model id of the demo model whose weights ship inside the
// binary, so a fresh install with no network can place and chat at once.
const BuiltinID = "stories260k"

// builtinGGUF is Karpathy's stories260K (MIT) as ggml-org converted it; see
// testdata/SOURCES.md.
//
//go:embed builtin/stories260K.gguf
var builtinGGUF []byte

const builtinSHA256 = "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"

const builtinFile = "stories260K.gguf"

// storyTemplate renders a conversation as plain text after BOS.
const storyTemplate = "{{ bos_token }}{% for m in messages %}{% if m['role'] != 'system' %}{{ m['content'] }}{% endif %}{% endfor %}"

// BuiltinCard returns the demo model's card, computed from its embedded header.
func BuiltinCard() (Card, error) {
	f, err := gguf.Parse(builtinGGUF)
	if err != nil {
		return Card{}, fmt.Errorf("catalog: embedded demo model: %w", err)
	}
	c, err := CardFromGGUF(BuiltinID, f)
	if err != nil {
		return Card{}, err
	}
	c.StorageBytes = int64(len(builtinGGUF))
	c.Name = "stories260K (TinyStories demo, built in)"
	c.Builtin = true
	c.Files = []string{builtinFile}
	c.Revision = builtinSHA256
	// stories260K is a story model, not a chat model: its "chat" continues
	// the conversation's text as a story.
	c.ChatTemplate = storyTemplate
	return c, nil
}

// MaterializeBuiltin writes the embedded weights under dir (once; an intact
// copy is reused) and returns the file's path. The write is atomic.
func MaterializeBuiltin(dir string) (string, error) {
	path := filepath.Join(dir, BuiltinID, builtinFile)
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, builtinGGUF) {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if sum := sha256.Sum256(builtinGGUF); hex.EncodeToString(sum[:]) != builtinSHA256 {
		return "", fmt.Errorf("catalog: the embedded demo model is corrupt (sha256 %x)", sum)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".stories-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(builtinGGUF); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}
