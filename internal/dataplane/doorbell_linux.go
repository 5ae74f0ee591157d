//go:build linux

package dataplane

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Doorbell is a Waker over an eventfd. Its counter coalesces several Rings
// into one wake-up but never loses one. The fd stays in blocking mode so it
// can be inherited by a child process (os/exec forces inherited fds
// blocking); a Wait is woken on cancellation by ringing the bell itself.
//
// Close only after every Wait on this Doorbell has returned.
type Doorbell struct {
	fd int
}

// NewDoorbell creates an eventfd-backed doorbell.
func NewDoorbell() (*Doorbell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("dataplane: eventfd: %w", err)
	}
	return &Doorbell{fd: fd}, nil
}

// DoorbellFromFile adopts an inherited eventfd; f is closed.
func DoorbellFromFile(f *os.File) (*Doorbell, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dataplane: adopt doorbell: %w", err)
	}
	return &Doorbell{fd: fd}, nil
}

// File returns a duplicate of the eventfd for exec.Cmd.ExtraFiles; the
// caller closes it after the child has started.
func (d *Doorbell) File() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(d.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dataplane: dup doorbell: %w", err)
	}
	return os.NewFile(uintptr(fd), "dataplane-doorbell"), nil
}

// Ring adds one wake hint.
func (d *Doorbell) Ring() error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	for {
		_, err := unix.Write(d.fd, one[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("dataplane: ring doorbell: %w", err)
		}
		return nil
	}
}

// Wait blocks until at least one Ring happened since the last Wait, or ctx
// ends.
func (d *Doorbell) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = d.Ring() })
	defer stop()
	var buf [8]byte
	for {
		_, err := unix.Read(d.fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("dataplane: wait doorbell: %w", err)
		}
		return ctx.Err()
	}
}

// Close releases the eventfd.
func (d *Doorbell) Close() error {
	if d.fd < 0 {
		return errors.New("dataplane: doorbell already closed")
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}
