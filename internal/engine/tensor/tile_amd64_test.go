//go:build amd64 && !purego

package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQ4_KVNNIMatchesAVX2 checks that the AVX-512 one-row Q4_K kernel sums
// exactly as the AVX2 one does, which the Q4_K tile relies on too.
func TestQ4_KVNNIMatchesAVX2(t *testing.T) {
	if f := cpuFeatures(); !f.AVX512F || !f.AVX512BW || !f.AVX512VL || !f.AVX512VNNI {
		t.Skip("this CPU lacks AVX-512 BW, VL or VNNI")
	}
	r := rand.New(rand.NewPCG(35, 36))
	for _, nb := range []int{1, 2, 3, 8, 33} {
		n := nb * QK_K
		for _, extreme := range []bool{false, true} {
			rows, _, acts, _ := tileOperands(r, Q4_K, n, 1, 1, 0, extreme)
			got, want := vecDotQ4_KVNNI(rows, acts, n), vecDotQ4_KAVX2(rows, acts, n)
			if math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("n=%d extreme=%v: VNNI %g, AVX2 %g", n, extreme, got, want)
			}
		}
	}
}
