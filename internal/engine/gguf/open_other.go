//go:build !unix

package gguf

import (
	"fmt"
	"os"
)

// Open reads the whole file and parses it (no memory mapping on this platform).
func Open(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
