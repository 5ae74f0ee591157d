package vfs

import (
	"errors"
	"syscall"
)

// IsNoSpace reports whether err says a disk is full: ENOSPC, or a quota
// exhausted (EDQUOT, where the platform has it). Writers name the disk and
// what needed the space when it is.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || isQuota(err)
}
