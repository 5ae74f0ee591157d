package model

import (
	"math"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// The elementwise operations follow ggml's CPU arithmetic (the order of
// float32 roundings, double where ggml sums in double) so logits track
// llama.cpp's closely.

// rmsNorm writes x normalised by its root mean square, times w, into dst.
func rmsNorm(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		dst[i] = (v * scale) * w[i]
	}
}

// softmaxScaled turns x into softmax(x·scale) in place, with k's
// exponentials (a deterministic function of the scaled scores, so the same
// scores give the same weights whatever the batch).
func softmaxScaled(k tensor.Kernels, x []float32, scale float32) {
	max := k.ScaleMax(x, scale)
	k.Scale(x, 1/k.ExpSub(x, max))
}

// ropeTable holds cos and sin of every rotated pair at every position of a batch.
type ropeTable struct {
	half     int
	cos, sin []float32 // [n × half]
}

// ropeTable fills t (sized for at least len(pos) rows) for the rows'
// positions pos.
func (s *Shard) ropeTable(t *ropeTable, pos []int) {
	c := s.Config
	half := t.half
	thetaScale := float32(math.Pow(float64(c.RopeBase), -2/float64(c.RopeDim)))
	freqScale := float32(1)
	if c.RopeScaling.Type == "linear" {
		freqScale = 1 / c.RopeScaling.Factor
	}
	for i, p := range pos {
		theta := float32(p)
		for j := 0; j < half; j++ {
			th := theta
			if s.ropeFreqs != nil {
				th /= s.ropeFreqs[j]
			}
			th *= freqScale
			t.cos[i*half+j] = float32(math.Cos(float64(th)))
			t.sin[i*half+j] = float32(math.Sin(float64(th)))
			theta *= thetaScale
		}
	}
}

// rope rotates one head vector of token i in place.
func (t ropeTable) rope(v []float32, i int, neox bool) {
	cs := t.cos[i*t.half : (i+1)*t.half]
	sn := t.sin[i*t.half : (i+1)*t.half]
	if neox {
		for j := 0; j < t.half; j++ {
			x0, x1 := v[j], v[j+t.half]
			v[j] = x0*cs[j] - x1*sn[j]
			v[j+t.half] = x0*sn[j] + x1*cs[j]
		}
		return
	}
	for j := 0; j < t.half; j++ {
		x0, x1 := v[2*j], v[2*j+1]
		v[2*j] = x0*cs[j] - x1*sn[j]
		v[2*j+1] = x0*sn[j] + x1*cs[j]
	}
}
