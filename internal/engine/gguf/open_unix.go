//go:build unix

package gguf

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

type mapping []byte

func (m mapping) Close() error { return unix.Munmap(m) }

// drop advises the kernel that the whole pages of b, which must lie in m,
// are not needed; the advice is best effort, so its error is ignored.
func (m mapping) drop(b []byte) {
	if len(b) == 0 || len(m) == 0 {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData([]byte(m))))
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if start < base || start+uintptr(len(b)) > base+uintptr(len(m)) {
		return
	}
	page := uintptr(os.Getpagesize())
	lo := (start - base + page - 1) / page * page
	hi := (start - base + uintptr(len(b))) / page * page
	if hi > lo {
		_ = unix.Madvise(m[lo:hi], unix.MADV_DONTNEED)
	}
}

// Open memory-maps the file at path read-only and parses it.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s is not a regular file", path)
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("gguf: %s: %w", path, &FormatError{Field: "magic", Err: ErrTruncated})
	}
	if int64(int(size)) != size {
		return nil, fmt.Errorf("gguf: %s is too large to map", path)
	}
	b, err := unix.Mmap(int(fd.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf: mmap %s: %w", path, err)
	}
	f, err := Parse(b)
	if err != nil {
		unix.Munmap(b)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = mapping(b)
	return f, nil
}
