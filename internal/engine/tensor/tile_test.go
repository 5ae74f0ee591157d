package tensor

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// tileKernels are the generic kernels and every SIMD path this CPU runs.
func tileKernels(t *testing.T, fn func(t *testing.T, k Kernels)) {
	t.Run("generic", func(t *testing.T) { fn(t, Generic()) })
	simdPaths(t, fn)
}

// tileOperands builds nrows weight rows rowStride bytes apart and nacts
// activation rows actStride bytes apart, with the padding between rows
// filled with junk the kernels must not read into their results. extreme
// pushes the integer sums to their limits: Q8_0 weight quants −128 and 127
// with Q8_0 activation quants ±127, Q4_K scales, mins and quants at their
// maxima with Q8_K activation quants ±127 and −128.
func tileOperands(r *rand.Rand, typ Type, n, nrows, nacts, pad int, extreme bool) (rows []byte, rowStride int, acts []byte, actStride int) {
	rb, _ := RowBytes(typ, int64(n))
	ab, _ := RowBytes(VecDotType(typ), int64(n))
	rowStride, actStride = int(rb)+pad, int(ab)+pad
	rows = make([]byte, (nrows-1)*rowStride+int(rb))
	acts = make([]byte, (nacts-1)*actStride+int(ab))
	for i := range rows {
		rows[i] = byte(r.Uint32())
	}
	for i := range acts {
		acts[i] = byte(r.Uint32())
	}
	for i := 0; i < nrows; i++ {
		row, _ := Quantize(typ, gaussian(r, n, 0.05))
		if extreme && typ == Q8_0 {
			for b := 0; b < len(row)/34; b++ {
				for j := 2; j < 34; j++ {
					row[b*34+j] = []byte{0x80, 0x7f}[r.IntN(2)]
				}
			}
		}
		if extreme && typ == Q4_K {
			// Every scale and min 63, every quant 15: the largest
			// integer sums a block can make.
			for b := 0; b < len(row)/144; b++ {
				for j := 4; j < 144; j++ {
					row[b*144+j] = 0xff
				}
			}
		}
		copy(rows[i*rowStride:], row)
	}
	for a := 0; a < nacts; a++ {
		act := acts[a*actStride : a*actStride+int(ab)]
		_ = Generic().QuantizeAct(typ, gaussian(r, n, 1), act)
		if extreme && VecDotType(typ) == Q8_0 {
			for b := 0; b < len(act)/34; b++ {
				fillActQuants(Q8_0, act[b*34:], 127, b%2 == 1)
			}
		}
		if extreme && VecDotType(typ) == Q8_K {
			// ±127 and −128, which the Q8_K quantizer can produce.
			for b := 0; b < len(act)/292; b++ {
				if b%2 == 0 {
					fillActQuants(Q8_K, act[b*292:], 127, true)
				} else {
					fillActQuants(Q8_K, act[b*292:], -128, false)
				}
			}
		}
	}
	return rows, rowStride, acts, actStride
}

// TestVecDotTile checks that every (row, activation) result of a tile is
// bit for bit the VecDot of that pair with the same kernels, for tile shapes
// around the 4×4 register tile, odd and even block counts, padded strides
// and the integer extremes, and that nothing outside the tile is written.
func TestVecDotTile(t *testing.T) {
	tileKernels(t, func(t *testing.T, k Kernels) {
		r := rand.New(rand.NewPCG(31, 32))
		for _, typ := range dotTypes {
			be := max(typ.BlockElems(), VecDotType(typ).BlockElems(), 32)
			nbs := []int{1, 2, 3, 8}
			switch typ {
			case Q8_0, Q4_0:
				nbs = append(nbs, 5, 64, 65)
			case Q4_K:
				nbs = append(nbs, 5, 32)
			}
			ns := make([]int, 0, len(nbs)+8)
			for _, nb := range nbs {
				ns = append(ns, nb*be)
			}
			if typ.BlockElems() == 1 {
				// The float kernels' 8-element steps and scalar tails.
				ns = append(ns, 1, 7, 8, 15, 40, 45, 63, 288+5)
			}
			for _, n := range ns {
				for _, shape := range [][2]int{{1, 1}, {7, 1}, {16, 1}, {13, 2}, {4, 4}, {3, 5}, {5, 3}, {8, 8}, {9, 7}, {4, 9}, {12, 4}, {4, 13}, {5, 17}} {
					nrows, nacts := shape[0], shape[1]
					for _, extreme := range []bool{false, true} {
						pad := r.IntN(5)
						rows, rs, acts, as := tileOperands(r, typ, n, nrows, nacts, pad, extreme)
						rb, ab := len(rows)-(nrows-1)*rs, len(acts)-(nacts-1)*as
						outStride := nrows + r.IntN(3)
						out := make([]float32, (nacts-1)*outStride+nrows+2)
						const guard = 0x7fc0dead // a NaN no kernel produces
						for i := range out {
							out[i] = math.Float32frombits(guard)
						}
						k.VecDotTile(typ, rows, rs, nrows, acts, as, nacts, n, out, outStride)
						for i := range out {
							a, rr := i/outStride, i%outStride
							inTile := a < nacts && rr < nrows
							got := math.Float32bits(out[i])
							if !inTile {
								if got != guard {
									t.Fatalf("%s %s n=%d %dx%d: out[%d] outside the tile was written", k.Name(), typ, n, nrows, nacts, i)
								}
								continue
							}
							want := k.VecDot(typ, rows[rr*rs:rr*rs+rb], acts[a*as:a*as+ab], n)
							if got != math.Float32bits(want) {
								t.Fatalf("%s %s n=%d %dx%d extreme=%v row %d act %d: tile %g, VecDot %g",
									k.Name(), typ, n, nrows, nacts, extreme, rr, a, out[i], want)
							}
						}
					}
				}
			}
		}
	})
}

// TestVecDotTileSizes checks that VecDotTile refuses buffers too short for
// the tile it is asked for, and accepts an empty tile.
func TestVecDotTileSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	const n, nrows, nacts = 64, 4, 4
	rows, rs, acts, as := tileOperands(r, Q8_0, n, nrows, nacts, 0, false)
	out := make([]float32, nrows*nacts)
	for _, bad := range []struct {
		name              string
		rows, acts        []byte
		rs, as, outStride int
		out               []float32
	}{
		{"short rows", rows[:len(rows)-1], acts, rs, as, nrows, out},
		{"row stride below a row", rows, acts, rs - 1, as, nrows, out},
		{"short activations", rows, acts[:len(acts)-1], rs, as, nrows, out},
		{"activation stride below a row", rows, acts, rs, as - 1, nrows, out},
		{"short out", rows, acts, rs, as, nrows, out[:len(out)-1]},
		{"out stride below the rows", rows, acts, rs, as, nrows - 1, out},
	} {
		func() {
			defer func() {
				var se *SizeError
				if err, _ := recover().(error); !errors.As(err, &se) {
					t.Errorf("%s: recovered %v, want *SizeError", bad.name, err)
				}
			}()
			Best().VecDotTile(Q8_0, bad.rows, bad.rs, nrows, bad.acts, bad.as, nacts, n, bad.out, bad.outStride)
		}()
	}
	Best().VecDotTile(Q8_0, nil, 0, 0, acts, as, nacts, n, nil, 0)
	Best().VecDotTile(Q8_0, rows, rs, nrows, nil, 0, 0, n, nil, 0)
}
