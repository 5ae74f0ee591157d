//go:build !(amd64 || arm64) || purego

package tensor

// archTable has no SIMD kernels to offer on this architecture (or with the
// purego build tag), so Select always returns the generic table.
func archTable(Features) *kernelTable { return nil }

// haveArchKernels says whether this build has assembly kernels at all.
const haveArchKernels = false
