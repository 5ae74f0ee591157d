package placement

import (
	"fmt"
	"math"
)

// Byte counts come from cards and telemetry we do not control, so every sum
// and product saturates at MaxInt64 instead of wrapping: a saturated need is
// simply never below any available figure, and admission refuses it.

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// percentOf returns x×p/100 for 0 ≤ p ≤ 100 without overflowing.
func percentOf(x, p int64) int64 {
	return x/100*p + x%100*p/100
}

// formatBytes renders a byte count the way an operator reads free memory.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}
