package tensor

import "strings"

// CPUFeatures returns the CPU capabilities kernel selection looks at, as
// detected on this machine.
func CPUFeatures() Features { return cpuFeatures() }

// String lists the features present, e.g. "avx2 fma f16c"; "none" when
// none is.
func (f Features) String() string {
	var out []string
	for _, x := range []struct {
		name string
		on   bool
	}{{"avx2", f.AVX2}, {"fma", f.FMA}, {"f16c", f.F16C}, {"avx512f", f.AVX512F}, {"avx512bw", f.AVX512BW},
		{"avx512vl", f.AVX512VL}, {"avx512vnni", f.AVX512VNNI}, {"neon", f.NEON}, {"dotprod", f.ARMDotProd}} {
		if x.on {
			out = append(out, x.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}
