package runner

import (
	"strings"
	"testing"
)

func TestCheckSlots(t *testing.T) {
	for _, c := range []struct {
		slots, context int
		want           string // "" admits
	}{
		{8, 8192, ""},
		{32, 8192, ""},
		{33, 8192, "33 slots need at least 33 × 256 = 8448 tokens of KV cache (8650752 bytes at 1024 bytes a token), but the placement admitted 8192 tokens (8388608 bytes); use at most 32 slots"},
		{8, 512, "use at most 2 slots"},
		{1, 100, ""},
		{2, 100, "use at most 1 slots"},
		{0, 8192, "at least 1"},
	} {
		err := checkSlots(c.slots, c.context, 1024)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%d slots in %d tokens: %v", c.slots, c.context, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%d slots in %d tokens: %v, want an error saying %q", c.slots, c.context, err, c.want)
		}
	}
}

func TestSlotsForDefault(t *testing.T) {
	for _, c := range []struct{ context, want int }{{32768, DefaultSlots}, {2048, 8}, {1024, 4}, {16, 1}} {
		if got, err := slotsFor(0, false, c.context, 1024); err != nil || got != c.want {
			t.Errorf("the default in a %d-token window: %d, %v; want %d", c.context, got, err, c.want)
		}
	}
	if _, err := slotsFor(16, true, 2048, 1024); err == nil {
		t.Error("16 explicit slots in a 2048-token window were admitted")
	}
}

func TestPrefixBytes(t *testing.T) {
	if got := prefixBytes(AutoPrefixCache, 32768, 32768); got != 1<<30 {
		t.Errorf("the automatic bound of a 32768-token window at 32 KiB a token: %d, want 1 GiB", got)
	}
	if got := prefixBytes(0, 32768, 32768); got != 0 {
		t.Errorf("0 MiB: %d", got)
	}
	if got := prefixBytes(256, 2048, 640); got != 256<<20 {
		t.Errorf("256 MiB: %d", got)
	}
}
