package node

import (
	"testing"

	"github.com/skulk/skulk/internal/observe/telemetry"
)

func TestBudgeted(t *testing.T) {
	m := telemetry.Memory{TotalBytes: 64 << 30, AvailableBytes: 40 << 30}
	for _, tc := range []struct {
		budget       int64
		total, avail int64
	}{
		{0, 64 << 30, 40 << 30},
		{8 << 30, 8 << 30, 8 << 30},
		{50 << 30, 50 << 30, 40 << 30},
		{100 << 30, 64 << 30, 40 << 30},
	} {
		got := budgeted(m, tc.budget)
		if got.TotalBytes != tc.total || got.AvailableBytes != tc.avail {
			t.Errorf("budget %d: %+v", tc.budget, got)
		}
	}
}
