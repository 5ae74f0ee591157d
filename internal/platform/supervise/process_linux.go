//go:build linux

package supervise

import "syscall"

// sysProcAttr puts the child in a process group of its own and, on Linux,
// has the kernel kill it if this process dies without cleaning up.
func sysProcAttr() (*syscall.SysProcAttr, error) {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}, nil
}
