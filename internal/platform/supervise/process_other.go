//go:build !unix

package supervise

import "syscall"

func sysProcAttr() (*syscall.SysProcAttr, error) { return nil, ErrUnsupported }

func signalGroup(pid int, sig syscall.Signal) error { return ErrUnsupported }
