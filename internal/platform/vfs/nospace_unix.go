//go:build linux || darwin || freebsd

package vfs

import (
	"errors"
	"syscall"
)

func isQuota(err error) bool { return errors.Is(err, syscall.EDQUOT) }
