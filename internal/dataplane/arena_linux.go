//go:build linux

package dataplane

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MaxArenaCeiling bounds the sparse arena so a bad size cannot ask the
// kernel for an absurd mapping.
const MaxArenaCeiling = 1 << 40

// Arena is one node's shared-memory address space: a memfd truncated to a
// sparse ceiling and mapped once. It never grows, shrinks or remaps, so
// arena offsets stay valid for the process lifetime.
type Arena struct {
	file *os.File
	mem  []byte
}

// NewArena creates the node's arena. Pages are allocated on first touch.
func NewArena(name string, ceiling uint64) (*Arena, error) {
	if ceiling == 0 || ceiling > MaxArenaCeiling || ceiling%uint64(os.Getpagesize()) != 0 {
		return nil, fmt.Errorf("%w: %d (want a page multiple in (0, %d])", ErrInvalidArenaSize, ceiling, uint64(MaxArenaCeiling))
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("dataplane: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := unix.Ftruncate(fd, int64(ceiling)); err != nil {
		f.Close()
		return nil, fmt.Errorf("dataplane: truncate arena to %d: %w", ceiling, err)
	}
	return mapArena(f, ceiling)
}

// MapArena maps an arena inherited from the node process (for example via
// exec.Cmd.ExtraFiles). It takes ownership of f.
func MapArena(f *os.File) (*Arena, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("dataplane: stat arena: %w", err)
	}
	size := uint64(st.Size)
	if size == 0 || size > MaxArenaCeiling {
		f.Close()
		return nil, fmt.Errorf("%w: inherited arena of %d bytes", ErrInvalidArenaSize, size)
	}
	return mapArena(f, size)
}

func mapArena(f *os.File, size uint64) (*Arena, error) {
	mem, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dataplane: mmap arena of %d bytes: %w", size, err)
	}
	return &Arena{file: f, mem: mem}, nil
}

// Bytes is this process's view of the whole arena.
func (a *Arena) Bytes() []byte { return a.mem }

// Size is the arena ceiling in bytes.
func (a *Arena) Size() uint64 { return uint64(len(a.mem)) }

// File is the memfd, to pass to a child process. It stays owned by a.
func (a *Arena) File() *os.File { return a.file }

// Close unmaps the arena and closes the memfd. No ring may be in use.
func (a *Arena) Close() error {
	err := unix.Munmap(a.mem)
	a.mem = nil
	if cerr := a.file.Close(); err == nil {
		err = cerr
	}
	return err
}
