package tensor

import (
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"
)

// guarded returns a copy of b that ends exactly where an inaccessible page
// begins, so a kernel reading even one byte past its operand faults.
func guarded(t *testing.T, b []byte) []byte {
	t.Helper()
	page := unix.Getpagesize()
	size := (len(b)+page-1)/page*page + page
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	if err := unix.Mprotect(mem[size-page:], unix.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	g := mem[size-page-len(b) : size-page : size-page]
	copy(g, b)
	return g
}

// TestSIMDNoOverread runs every SIMD kernel with both operands ending at a
// guard page, for lengths whose tails take every code path.
func TestSIMDNoOverread(t *testing.T) {
	simdPaths(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(31, 32))
		for _, typ := range simdTypes {
			be := max(typ.BlockElems(), VecDotType(typ).BlockElems())
			for _, units := range []int{1, 2, 3, 7, 8, 9, 31, 32, 33} {
				if _, maxBlocks := exactLimits(typ); be > 1 && units > maxBlocks {
					continue // keep the comparison exact
				}
				n := units * be
				row, act := exactOperands(r, typ, n, 1)
				want := Generic().VecDot(typ, row, act, n)
				if got := k.VecDot(typ, guarded(t, row), guarded(t, act), n); got != want {
					t.Errorf("%s n=%d: guarded %s = %g, generic %g", typ, n, k.Name(), got, want)
				}
			}
		}
	})
}
