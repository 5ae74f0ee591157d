//go:build unix && !linux

package supervise

import "syscall"

// sysProcAttr puts the child in a process group of its own.
func sysProcAttr() (*syscall.SysProcAttr, error) {
	return &syscall.SysProcAttr{Setpgid: true}, nil
}
