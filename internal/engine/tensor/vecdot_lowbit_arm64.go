//go:build arm64 && !purego

package tensor

//go:generate sh -c "python3 gen_neon_lowbit.py > vecdot_lowbit_arm64.s"

// SDOT kernels of the 2–4-bit types (vecdot_lowbit_arm64.s), each
// what the generic function of the same name without the suffix computes
// (vecdot_lowbit.go) up to float rounding.

//go:noescape
func vecDotQ2_KNEON(row, act []byte, n int) float32

//go:noescape
func vecDotQ3_KNEON(row, act []byte, n int) float32

//go:noescape
func vecDotIQ4_NLNEON(row, act []byte, n int) float32

//go:noescape
func vecDotIQ4_XSNEON(row, act []byte, n int) float32

//go:noescape
func vecDotMXFP4NEON(row, act []byte, n int) float32

// setLowbitNEON puts the SDOT kernels of the 2–4-bit types into t.
func setLowbitNEON(t *kernelTable) {
	t.vecDot[Q2_K] = vecDotQ2_KNEON
	t.vecDot[Q3_K] = vecDotQ3_KNEON
	t.vecDot[IQ4_NL] = vecDotIQ4_NLNEON
	t.vecDot[IQ4_XS] = vecDotIQ4_XSNEON
	t.vecDot[MXFP4] = vecDotMXFP4NEON
}
