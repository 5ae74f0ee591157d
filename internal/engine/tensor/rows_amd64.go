//go:build amd64 && !purego

package tensor

// Row loops in assembly (rows_amd64.s): out[r] = ONE(row r, act, n) for
// r < nrows, rows stride bytes apart, each rb bytes, act actLen bytes:
// bit for bit the one-row kernel named in each, without a Go call per row.
type asmRowsFunc func(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotQ8_0RowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotQ4_0RowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotQ4_KRowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotQ5_KRowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotQ6_KRowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotQ2_KRowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotQ3_KRowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotIQ4_NLRowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotIQ4_XSRowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

//go:noescape
func vecDotMXFP4RowsAVX2(rows *byte, stride, nrows int, act *byte, actLen, n, rb int, out *float32)

// asmRows makes the VecDotRowsFunc of type t from its assembly row loop.
// The caller (VecDotRows, VecDotTile, a tile's edges) has checked that
// the rows, the activation and out fit.
func asmRows(t Type, f asmRowsFunc) VecDotRowsFunc {
	return func(rows []byte, stride int, act []byte, n int, out []float32) {
		rowsAsm(t, f, rows, stride, act, n, out)
	}
}

// rowsAsm runs the row loop f over len(out) rows of type t.
func rowsAsm(t Type, f asmRowsFunc, rows []byte, stride int, act []byte, n int, out []float32) {
	if len(out) == 0 {
		return
	}
	if len(act) == 0 { // n = 0: empty sums
		clear(out)
		return
	}
	f(&rows[0], stride, len(out), &act[0], len(act), n, rowLen(t, n), &out[0])
}
