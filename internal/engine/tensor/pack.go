package tensor

import (
	"encoding/binary"
	"fmt"
)

// Packed weights. A matrix-vector product over weights stored row after
// row decodes each row on its own and reduces it to one number at the
// end. Kernels that interleave the bytes of a group of rows instead hold
// one row per vector lane: the block scales of the group convert in one
// instruction, one activation load serves every row of the group, and the
// group's sums come out in one register, ready to store. On AVX2 this
// takes a decode step's product from 16 to 9 instructions per row and
// block for MXFP4 and from 14 to 8 for Q8_0 (llama.cpp repacks MXFP4 and
// Q4_0 for the same reason, into layouts of its own). Packed here: MXFP4,
// Q8_0 and Q4_0, eight rows to a group.
//
// A packed matrix is multiplied only by VecDotPacked, which sums each
// (row, activation) pair in one fixed order whatever the number of
// activations: decode and prefill agree bit for bit on packed weights,
// though not with VecDot on the unpacked rows, whose sums run in another
// order.

// VecDotPackedFunc computes out[a·outStride+r] for r < nrows (a multiple
// of the type's PackRows) and a < nacts, from weight rows packed by the
// table's pack function and activations actStride bytes apart.
type VecDotPackedFunc func(packed []byte, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int)

// PackRows is how many weight rows of type t the kernels interleave into
// one group, or 0 when they multiply t's rows as stored. A matrix is
// packed only when its rows are a whole number of groups.
func (k Kernels) PackRows(t Type) int {
	if k.entry(t) < 0 {
		return 0
	}
	return k.table().packRows[t]
}

// Pack rearranges rows weight rows of n elements of type t from src into
// dst, the same size, in the layout VecDotPacked reads. Packing is pure:
// the same rows give the same bytes on every machine whose kernels pack t.
func (k Kernels) Pack(t Type, src []byte, rows, n int, dst []byte) error {
	g := k.PackRows(t)
	if g == 0 {
		return &UnsupportedError{Op: "pack", Type: t}
	}
	if rows%g != 0 {
		return fmt.Errorf("tensor: pack %d rows of %s: not a whole number of %d-row groups", rows, t, g)
	}
	if n <= 0 || n%t.BlockElems() != 0 {
		return &SizeError{Op: "pack", Type: t, Elems: n, What: "row", Got: len(src), Want: -1}
	}
	rb := rowLen(t, n)
	if len(src) != rows*rb || len(dst) != len(src) {
		return &SizeError{Op: "pack", Type: t, Elems: n, What: "rows", Got: len(src), Want: rows * rb}
	}
	k.table().pack[t](src, rows, n/t.BlockElems(), dst)
	return nil
}

// VecDotPacked computes out[a·outStride+r] = Σ_c row r · act a for every
// r < nrows and a < nacts, over weight rows that Pack laid out (nrows a
// whole number of groups, packed starting at a group boundary) and
// activations in VecDotType(t)'s layout. Each result is the same bit for
// bit however the rows and activations are split between calls. Sizes
// that do not fit are a programming error and panic with the typed error.
func (k Kernels) VecDotPacked(t Type, packed []byte, nrows int, acts []byte, actStride, nacts, n int, out []float32, outStride int) {
	g := k.PackRows(t)
	rb, ab := rowLen(t, n), rowLen(VecDotType(t), n)
	if err := k.CheckDot(t, n, rb, ab); err != nil {
		panic(err)
	}
	if g == 0 {
		panic(&UnsupportedError{Op: "packed dot product", Type: t})
	}
	if nrows <= 0 || nacts <= 0 {
		return
	}
	if nrows%g != 0 || len(packed) < nrows*rb {
		panic(&SizeError{Op: "packed dot product", Type: t, Elems: n, What: "packed rows", Got: len(packed), Want: (nrows + g - 1) / g * g * rb})
	}
	if err := checkStrided("packed dot product", VecDotType(t), n, "activations", acts, actStride, nacts, ab); err != nil {
		panic(err)
	}
	if err := checkOut(out, outStride, nacts, nrows); err != nil {
		panic(err)
	}
	k.table().vecDotPacked[t](packed, nrows, acts, actStride, nacts, n, out, outStride)
}

// The MXFP4 group of eight rows, block by block (136 bytes, the size of
// the eight rows' 17-byte blocks): the eight exponents in row order, then
// the code bytes of rows 0, 1, 4, 5 and of rows 2, 3, 6, 7, first bytes
// 0–7 of each row (elements 0–7 in the low nibbles, 16–23 in the high
// ones), then bytes 8–15. Rows 0, 1, 4, 5 share their 32 bytes' positions
// so that, once the kernel has reduced each row's products to two int32
// lanes, one horizontal add of the two halves leaves rows 0–7 in lane
// order.
const (
	mxfp4Group     = 8
	mxfp4GroupSize = mxfp4Group * 17
)

// mxfp4Slots are the rows whose code bytes fill each 32-byte quarter of a
// packed block, in order.
var mxfp4Slots = [2][4]int{{0, 1, 4, 5}, {2, 3, 6, 7}}

// The Q8_0 group of eight rows, block by block (272 bytes, the size of the
// eight rows' 34-byte blocks): the eight fp16 scales in row order, then
// for k = 0..7 the quants 4k..4k+3 of rows 0..7, four bytes a row. A
// 32-byte load then holds four quants of every row, one row per int32
// lane, and the activation's matching four bytes broadcast across it.
// packQ8_0x8 packs rows (a multiple of eight) of nb Q8_0 blocks each.
func packQ8_0x8(src []byte, rows, nb int, dst []byte) { packQuads(src, rows, nb, 34, dst) }

// packQuads packs rows (a multiple of eight) of nb blocks of bb bytes, an
// fp16 scale and then quants (Q8_0, Q4_0): per block the eight scales in
// row order, then each 4-byte run of quants of rows 0..7 in turn.
func packQuads(src []byte, rows, nb, bb int, dst []byte) {
	rb, gb := nb*bb, 8*bb
	for g := 0; g < rows/8; g++ {
		in := src[g*8*rb : (g+1)*8*rb]
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*gb:][:gb]
			for r := range 8 {
				blk := in[r*rb+b*bb:][:bb]
				copy(out[2*r:2*r+2], blk[:2])
				for k := range (bb - 2) / 4 {
					copy(out[16+32*k+4*r:][:4], blk[2+4*k:][:4])
				}
			}
		}
	}
}

// The Q4_0 group of eight rows, block by block (144 bytes): the eight fp16
// scales in row order, then for k = 0..3 the code bytes 4k..4k+3 of rows
// 0..7, four bytes a row (low nibbles elements 4k..4k+3, high nibbles
// 16+4k..16+4k+3).

// packQ4_0x8 packs rows (a multiple of eight) of nb Q4_0 blocks each.
func packQ4_0x8(src []byte, rows, nb int, dst []byte) { packQuads(src, rows, nb, 18, dst) }

// packMXFP4x8 packs rows (a multiple of eight) of nb MXFP4 blocks each.
func packMXFP4x8(src []byte, rows, nb int, dst []byte) {
	rb := nb * 17
	for g := 0; g < rows/mxfp4Group; g++ {
		in := src[g*mxfp4Group*rb : (g+1)*mxfp4Group*rb]
		for b := 0; b < nb; b++ {
			out := dst[(g*nb+b)*mxfp4GroupSize:][:mxfp4GroupSize]
			for r := range mxfp4Group {
				out[r] = in[r*rb+b*17]
			}
			for q, slots := range mxfp4Slots {
				for s, r := range slots {
					blk := in[r*rb+b*17+1:][:16]
					binary.LittleEndian.PutUint64(out[8+32*q+8*s:], binary.LittleEndian.Uint64(blk))      // code bytes 0–7
					binary.LittleEndian.PutUint64(out[72+32*q+8*s:], binary.LittleEndian.Uint64(blk[8:])) // 8–15
				}
			}
		}
	}
}
