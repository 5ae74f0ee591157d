package prompt

import "math/rand/v2"

// randomSeed seeds a request that names no seed.
func randomSeed() uint64 { return rand.Uint64() }
