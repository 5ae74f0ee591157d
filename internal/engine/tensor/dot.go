package tensor

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// VecDotType is the type VecDot expects activations in for weights of type
// t, as in llama.cpp's CPU type traits: F32, F16 and BF16 pair with
// themselves, Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4 with Q8_0, Q4_1 and Q5_1
// with Q8_1, the K-quants and IQ4_XS with Q8_K. Types without a dot product
// report F32.
func VecDotType(t Type) Type {
	switch t {
	case F16, BF16:
		return t
	case Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4:
		return Q8_0
	case Q4_1, Q5_1:
		return Q8_1
	case Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS:
		return Q8_K
	default:
		return F32
	}
}

func (k Kernels) entry(t Type) int {
	if uint32(t) >= typeSlots {
		return -1
	}
	return int(t)
}

// Dequantize expands len(dst) elements of type t from src, which must be
// exactly RowBytes(t, len(dst)) bytes.
func (k Kernels) Dequantize(t Type, src []byte, dst []float32) error {
	i := k.entry(t)
	if i < 0 || k.table().dequantize[i] == nil {
		return &UnsupportedError{Op: "dequantize", Type: t}
	}
	if err := checkRow("dequantize", t, len(dst), len(src), "src"); err != nil {
		return err
	}
	k.table().dequantize[i](src, dst)
	return nil
}

// CheckDot reports whether DotF32 and VecDot accept a row of type t with n
// elements in rowBytes bytes and actBytes bytes of activations in
// VecDotType(t) (actBytes < 0 skips that check). Callers check once per
// matrix, then call the unchecked-cost dot products per row.
func (k Kernels) CheckDot(t Type, n, rowBytes, actBytes int) error {
	i := k.entry(t)
	if i < 0 || k.table().vecDot[i] == nil || k.table().dotF32[i] == nil {
		return &UnsupportedError{Op: "dot", Type: t}
	}
	if err := checkRow("dot", t, n, rowBytes, "row"); err != nil {
		return err
	}
	if actBytes >= 0 {
		if err := checkRow("dot", VecDotType(t), n, actBytes, "activations"); err != nil {
			return err
		}
	}
	return nil
}

// DotF32 returns Σ w[i]·x[i] over the len(x) elements of a stored row,
// dequantizing block by block and accumulating in float32 in element order.
// It is the reference the integer dot products are checked against. A row
// that CheckDot would refuse is a programming error and panics with the
// *SizeError or *UnsupportedError.
func (k Kernels) DotF32(t Type, row []byte, x []float32) float32 {
	if err := k.CheckDot(t, len(x), len(row), -1); err != nil {
		panic(err)
	}
	return k.table().dotF32[t](row, x)
}

// F32Bytes is x's memory as bytes: an F32 row of len(x) elements, for the
// kernels that take rows as bytes. It aliases x.
func F32Bytes(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// DotF32TileChunk is the granularity at which DotF32Tile reads its rows
// and float rows: whole chunks of this many elements.
const DotF32TileChunk = 8

// DotF32TilePad is how many elements DotF32Tile reads of a span of n: n
// rounded up to whole DotF32TileChunk chunks.
func DotF32TilePad(n int) int {
	return (n + DotF32TileChunk - 1) / DotF32TileChunk * DotF32TileChunk
}

// DotF32Tile computes out[i·outStride+r], for i < len(lens) and r < nrows,
// as the dot product of the first lens[i] elements of the row at
// rows[r·stride:] (type t) with the first lens[i] of x[i·xStride:]: the
// attention's values (the transposed value cache's rows) weighted by
// several queries' softmax weights, whose spans differ.
//
// Each result depends only on its row, its float row and lens[i], never on
// the other float rows, their number or nrows, so a caller may group
// queries and rows any way it likes and get the same bits. Results agree
// with DotF32 up to float rounding but are not bit for bit DotF32: the
// kernels keep one accumulator per result. They read whole chunks of
// DotF32TileChunk elements, so rows must hold the elements of the longest
// span rounded up to a whole chunk, and so must each float row; what lies
// past a span does not change its result, whatever it holds. Sizes that do
// not fit are a programming error and panic with the typed error.
func (k Kernels) DotF32Tile(t Type, rows []byte, stride, nrows int, x []float32, xStride int, lens []int, out []float32, outStride int) {
	long := 0
	for _, n := range lens {
		if n > math.MaxInt32 { // the kernels count a span's elements in 32 bits
			panic(&SizeError{Op: "dot tile", Type: t, Elems: n, What: "span", Got: n, Want: math.MaxInt32})
		}
		if err := k.CheckDot(t, n, rowLen(t, n), -1); err != nil {
			panic(err)
		}
		long = max(long, n)
	}
	if nrows <= 0 || len(lens) == 0 {
		return
	}
	if need := (nrows-1)*stride + rowLen(t, DotF32TilePad(long)); stride < rowLen(t, long) || len(rows) < need {
		panic(&SizeError{Op: "dot tile", Type: t, Elems: long, What: "rows", Got: len(rows), Want: need})
	}
	for i, n := range lens {
		if need := i*xStride + DotF32TilePad(n); xStride < 0 || need > len(x) {
			panic(&SizeError{Op: "dot tile", Type: F32, Elems: n, What: "float rows", Got: len(x), Want: need})
		}
	}
	if err := checkOut(out, outStride, len(lens), nrows); err != nil {
		panic(err)
	}
	tb := k.table()
	if f := tb.dotF32Tile[t]; f != nil {
		f(rows, stride, nrows, x, xStride, lens, out, outStride)
		return
	}
	for i, n := range lens {
		for r := 0; r < nrows; r++ {
			out[i*outStride+r] = tb.dotF32[t](rows[r*stride:r*stride+rowLen(t, n)], x[i*xStride:i*xStride+n])
		}
	}
}

// VecDot returns the dot product of an n-element weight row of type t with
// activations already converted to VecDotType(t) (see QuantizeAct), using
// llama.cpp's integer-per-block arithmetic. Sizes that CheckDot would refuse
// are a programming error and panic with the typed error.
func (k Kernels) VecDot(t Type, row, act []byte, n int) float32 {
	if err := k.CheckDot(t, n, len(row), len(act)); err != nil {
		panic(err)
	}
	return k.table().vecDot[t](row, act, n)
}

// VecDotRows computes out[r] = VecDot(t, rows[r·stride:r·stride+rb], act, n)
// for every r < len(out), where rb is the byte size of one n-element row:
// several weight rows of a matrix against one activation row. It checks the
// sizes once per call instead of once per row, which matters when a SIMD dot
// over a row takes only tens of nanoseconds; callers splitting a matmul
// across threads pass each worker's row range. stride is the distance in
// bytes between row starts (rb for a contiguous matrix). Sizes that do not
// fit are a programming error and panic with the typed error.
func (k Kernels) VecDotRows(t Type, rows []byte, stride int, act []byte, n int, out []float32) {
	rb := rowLen(t, n)
	if err := k.CheckDot(t, n, rb, len(act)); err != nil {
		panic(err)
	}
	if len(out) == 0 {
		return
	}
	if err := checkStrided("dot rows", t, n, "rows", rows, stride, len(out), rb); err != nil {
		panic(err)
	}
	k.table().rows(t, rows, stride, act, n, out)
}

// rows is VecDotRows after the size checks: the type's rows kernel, or its
// one-pair kernel row by row.
func (tb *kernelTable) rows(t Type, rows []byte, stride int, act []byte, n int, out []float32) {
	if f := tb.vecDotRows[t]; f != nil {
		f(rows, stride, act, n, out)
		return
	}
	rowByRow(t, tb.vecDot[t], rows, stride, act, n, out)
}

// rowByRow computes out[r] = one(row r, act, n) for r < len(out), the rows
// of type t stride bytes apart: the rows path of a type without a rows
// kernel.
func rowByRow(t Type, one VecDotFunc, rows []byte, stride int, act []byte, n int, out []float32) {
	rb := rowLen(t, n)
	for r := range out {
		out[r] = one(rows[r*stride:r*stride+rb], act, n)
	}
}

// rowLen is the byte size of an n-element row of t (n a whole number of
// blocks; 0 for a type without blocks).
func rowLen(t Type, n int) int {
	if be := t.BlockElems(); be > 0 {
		return n / be * t.BlockBytes()
	}
	return 0
}

// checkStrided reports a *SizeError unless count rows of rb bytes, stride
// bytes apart, fit in buf.
func checkStrided(op string, t Type, elems int, what string, buf []byte, stride, count, rb int) error {
	if stride < rb || len(buf) < rb || stride > 0 && count-1 > (len(buf)-rb)/stride {
		return &SizeError{Op: op, Type: t, Elems: elems, What: what, Got: len(buf), Want: (count-1)*stride + rb}
	}
	return nil
}

// checkOut reports a *SizeError unless out holds count rows of n results,
// stride elements apart, without overlap.
func checkOut(out []float32, stride, count, n int) error {
	if count > 1 && stride < n || len(out) < n || stride > 0 && count-1 > (len(out)-n)/stride {
		return &SizeError{Op: "dot tile", Type: F32, Elems: n, What: "out", Got: len(out), Want: (count-1)*stride + n}
	}
	return nil
}

// VecDotTile computes out[a·outStride+r] = VecDot(t, row r, act a, n) for
// every r < nrows and a < nacts, where weight row r starts at
// rows[r·rowStride:] and activation row a at acts[a·actStride:]: a block of
// a matrix-matrix product. Each result is bit for bit the VecDot of its pair,
// however many rows and activations the call covers, so a caller may tile a
// matmul any way it likes. Kernels that multiply small register tiles (four
// rows by four activations) load every block once per tile instead of once
// per dot product. Sizes that do not fit are a programming error and panic
// with the typed error.
func (k Kernels) VecDotTile(t Type, rows []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
	rb, ab := rowLen(t, n), rowLen(VecDotType(t), n)
	if err := k.CheckDot(t, n, rb, ab); err != nil {
		panic(err)
	}
	if nrows <= 0 || nacts <= 0 {
		return
	}
	if err := checkStrided("dot tile", t, n, "rows", rows, rowStride, nrows, rb); err != nil {
		panic(err)
	}
	if err := checkStrided("dot tile", VecDotType(t), n, "activations", acts, actStride, nacts, ab); err != nil {
		panic(err)
	}
	if err := checkOut(out, outStride, nacts, nrows); err != nil {
		panic(err)
	}
	tb := k.table()
	if f := tb.vecDotTile[t]; f != nil {
		f(rows, rowStride, nrows, acts, actStride, nacts, n, out, outStride)
		return
	}
	for a := 0; a < nacts; a++ {
		tb.rows(t, rows, rowStride, acts[a*actStride:a*actStride+ab], n, out[a*outStride:a*outStride+nrows])
	}
}

// QuantizeAct converts activations x into dst in VecDotType(t)'s layout;
// dst must be RowBytes(VecDotType(t), len(x)) bytes.
func (k Kernels) QuantizeAct(t Type, x []float32, dst []byte) error {
	at := VecDotType(t)
	if i := k.entry(t); i < 0 || k.table().vecDot[i] == nil {
		return &UnsupportedError{Op: "quantize activations", Type: t}
	}
	if err := checkRow("quantize activations", at, len(x), len(dst), "dst"); err != nil {
		return err
	}
	k.table().quantizeAct[at](x, dst)
	return nil
}

// Dequantize expands len(dst) elements of type t from src with Best().
func Dequantize(t Type, src []byte, dst []float32) error { return Best().Dequantize(t, src, dst) }

// DotF32 is Best().DotF32.
func DotF32(t Type, row []byte, x []float32) float32 { return Best().DotF32(t, row, x) }

// VecDotRows is Best().VecDotRows.
func VecDotRows(t Type, rows []byte, stride int, act []byte, n int, out []float32) {
	Best().VecDotRows(t, rows, stride, act, n, out)
}

// VecDotTile is Best().VecDotTile.
func VecDotTile(t Type, rows []byte, rowStride, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
	Best().VecDotTile(t, rows, rowStride, nrows, acts, actStride, nacts, n, out, outStride)
}

// VecDot is Best().VecDot.
func VecDot(t Type, row, act []byte, n int) float32 { return Best().VecDot(t, row, act, n) }

// QuantizeAct is Best().QuantizeAct.
func QuantizeAct(t Type, x []float32, dst []byte) error { return Best().QuantizeAct(t, x, dst) }

func dotF32F32(row []byte, x []float32) float32 {
	var sum float32
	for i, v := range x {
		sum += float32(math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:])) * v)
	}
	return sum
}

// dotF16F32 is dotViaDequant's sum for F16 rows, bit for bit, without its
// buffer: an fp16 cache's attention runs it every decode step, and the
// buffer, passed to a function value, would be allocated every call.
func dotF16F32(row []byte, x []float32) float32 {
	var sum float32
	for i, v := range x {
		sum += float32(F16ToF32(binary.LittleEndian.Uint16(row[2*i:])) * v)
	}
	return sum
}

// dotViaDequant builds a DotF32Func that dequantizes a chunk of whole blocks
// into a stack buffer and accumulates w·x in float32, in element order.
func dotViaDequant(t Type, deq DequantizeFunc) DotF32Func {
	be, bb := t.BlockElems(), t.BlockBytes()
	const chunk = QK_K // a multiple of every block size used here
	return func(row []byte, x []float32) float32 {
		var buf [chunk]float32
		var sum float32
		for off := 0; off < len(x); off += chunk {
			n := min(chunk, len(x)-off)
			deq(row[off/be*bb:(off+n)/be*bb], buf[:n])
			for i, w := range buf[:n] {
				sum += float32(w * x[off+i])
			}
		}
		return sum
	}
}
