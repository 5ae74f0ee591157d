//go:build !unix

package hub

import "math"

// freeBytes is unknown off unix; admission then never refuses.
func freeBytes(string) (int64, error) { return math.MaxInt64 / 2, nil }
