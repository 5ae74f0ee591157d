package model

import (
	"math"

	"github.com/skulk/skulk/internal/engine/tensor"
)

// The elementwise operations follow ggml's CPU arithmetic (the order of
// float32 roundings, double where ggml sums in double) so logits track
// llama.cpp's closely.

// rmsNorm writes x normalised by its root mean square, times w (nil: 1), into dst.
func rmsNorm(dst, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	if w == nil {
		// ggml_rms_norm alone (llama4's q/k norm): no weights.
		for i, v := range x {
			dst[i] = v * scale
		}
		return
	}
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

// softmaxSink is softmaxScaled with one more logit, sink, in the
// denominator only (ggml_soft_max_add_sinks): the weights of x sum to less
// than one. sink = −Inf is no sink.
func softmaxSink(k tensor.Kernels, x []float32, scale, sink float32) {
	m := max(k.ScaleMax(x, scale), sink)
	sum := k.ExpSub(x, m) + float32(math.Exp(float64(sink-m)))
	k.Scale(x, 1/sum)
}

// ropeTable holds cos and sin of every rotated pair at every position of a batch.
type ropeTable struct {
	half     int
	cos, sin []float32 // [n × half]
}

// ropeTables fills the arena's rope tables (sized for at least len(pos)
// rows) for the rows' positions pos: the global blocks' table, and, for a
// model whose sliding-window blocks have a rope of their own
// (Config.RopeBaseSWA), theirs; for a model with an attention
// temperature, the rows' query factors.
func (s *Shard) ropeTables(a *arena, pos []int, segs []seg) {
	s.ropeTable(&a.rope, pos, segs, s.Config.RopeBase, true)
	if s.Config.RopeBaseSWA != 0 {
		s.ropeTable(&a.ropeSWA, pos, segs, s.Config.RopeBaseSWA, false)
	}
	if at := s.Config.AttnTemp; at.Scale != 0 {
		for i, p := range pos {
			a.qTemp[i] = at.factor(p)
		}
	}
}

// ropeTable fills t for the rows' positions pos with rope base base, and
// the model's rope scaling when scaled (llama.cpp's local blocks of gemma3
// take a frequency scale of 1); the rows of segs[i] take the frequency
// factors of its cache (Cache.ropeF).
func (s *Shard) ropeTable(t *ropeTable, pos []int, segs []seg, base float32, scaled bool) {
	c := s.Config
	half := t.half
	thetaScale := float32(math.Pow(float64(base), -2/float64(c.RopeDim)))
	freqScale := float32(1)
	if c.RopeScaling.Type == "linear" && scaled {
		freqScale = 1 / c.RopeScaling.Factor
	}
	// ggml's rope multiplies cos and sin by the attention factor
	// (rope.scaling.attn_factor, 1 when absent): phi3's LongRoPE sets it.
	mscale := c.RopeScaling.AttnFactor
	yarn := c.RopeScaling.Type == "yarn" && scaled
	var lo, hi float32
	if yarn {
		// ggml's rope_yarn: each pair's angle blends interpolation and
		// extrapolation along the correction ramp, and cos and sin carry
		// the magnitude correction.
		freqScale, mscale = c.yarn()
		mscale *= 1 + float32(0.1*logf(1/freqScale))
		lo, hi = yarnCorrDims(c.RopeDim, c.RopeScaling.OrigCtx, c.RopeBase, c.RopeScaling.BetaFast, c.RopeScaling.BetaSlow)
	}
	for _, sg := range segs {
		freqs := sg.c.ropeF
		for i := sg.row; i < sg.row+sg.n; i++ {
			theta := float32(pos[i])
			for j := 0; j < half; j++ {
				th := theta
				if freqs != nil {
					th /= freqs[j]
				}
				if yarn {
					interp := float32(freqScale * th)
					y := (float32(j) - lo) / max(0.001, hi-lo)
					mix := 1 - min(1, max(0, y))
					th = float32(interp*(1-mix)) + float32(th*mix)
				} else {
					th *= freqScale
				}
				t.cos[i*half+j] = float32(math.Cos(float64(th))) * mscale
				t.sin[i*half+j] = float32(math.Sin(float64(th))) * mscale
				theta *= thetaScale
			}
		}
	}
}

// yarnCorrDims is ggml_rope_yarn_corr_dims: the pairs between which YaRN
// ramps from extrapolation to interpolation.
func yarnCorrDims(nDims, origCtx int, base, betaFast, betaSlow float32) (lo, hi float32) {
	dim := func(beta float32) float32 {
		return float32(nDims) * logf(float32(origCtx)/(beta*2*float32(math.Pi))) / (2 * logf(base))
	}
	lo = max(0, float32(math.Floor(float64(dim(betaFast)))))
	hi = min(float32(nDims-1), float32(math.Ceil(float64(dim(betaSlow)))))
	return lo, hi
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
