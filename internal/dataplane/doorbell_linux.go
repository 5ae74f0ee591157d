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
// into one wake-up but never loses one. The eventfd is non-blocking and
// wrapped in an *os.File, so a Wait parks its goroutine in the runtime's
// netpoller instead of holding an OS thread (and its P) in read(2). A Wait
// is woken on cancellation by ringing the bell itself.
//
// The flag lives on the open file description, which a child inheriting
// the fd shares: os/exec's Fd call leaves a file that os.NewFile found
// already non-blocking as it is, and DoorbellFromFile keeps it so.
//
// Close only after every Wait on this Doorbell has returned.
type Doorbell struct {
	f *os.File
}

// NewDoorbell creates an eventfd-backed doorbell.
func NewDoorbell() (*Doorbell, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("dataplane: eventfd: %w", err)
	}
	return &Doorbell{f: os.NewFile(uintptr(fd), "dataplane-doorbell")}, nil
}

// DoorbellFromFile adopts an inherited eventfd; f is closed.
func DoorbellFromFile(f *os.File) (*Doorbell, error) {
	defer f.Close()
	fd, err := dupFile(f)
	if err != nil {
		return nil, fmt.Errorf("dataplane: adopt doorbell: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("dataplane: adopt doorbell: %w", err)
	}
	return &Doorbell{f: os.NewFile(uintptr(fd), "dataplane-doorbell")}, nil
}

// dupFile duplicates f's descriptor (close-on-exec) without f.Fd, which
// would put a non-blocking file into blocking mode.
func dupFile(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return fd, derr
}

// File returns a duplicate of the eventfd for exec.Cmd.ExtraFiles; the
// caller closes it after the child has started.
func (d *Doorbell) File() (*os.File, error) {
	fd, err := dupFile(d.f)
	if err != nil {
		return nil, fmt.Errorf("dataplane: dup doorbell: %w", err)
	}
	return os.NewFile(uintptr(fd), "dataplane-doorbell"), nil
}

// Ring adds one wake hint.
func (d *Doorbell) Ring() error {
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	if _, err := d.f.Write(one[:]); err != nil {
		return fmt.Errorf("dataplane: ring doorbell: %w", err)
	}
	return nil
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
	if _, err := d.f.Read(buf[:]); err != nil {
		return fmt.Errorf("dataplane: wait doorbell: %w", err)
	}
	return ctx.Err()
}

// Close releases the eventfd.
func (d *Doorbell) Close() error {
	if d.f == nil {
		return errors.New("dataplane: doorbell already closed")
	}
	err := d.f.Close()
	d.f = nil
	return err
}
