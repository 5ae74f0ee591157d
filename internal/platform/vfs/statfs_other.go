//go:build !(linux || darwin || freebsd)

package vfs

import (
	"errors"
	"fmt"
)

func freeBytes(name string) (uint64, error) {
	return 0, fmt.Errorf("vfs: statfs %s: %w", name, errors.ErrUnsupported)
}

func totalBytes(name string) (uint64, error) {
	return 0, fmt.Errorf("vfs: statfs %s: %w", name, errors.ErrUnsupported)
}
