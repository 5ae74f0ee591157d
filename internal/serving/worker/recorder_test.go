package worker

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRecorder: the ring keeps the latest RecorderSize phases, oldest
// first, and words them on one line for the log.
func TestRecorder(t *testing.T) {
	tests := []struct {
		name        string
		added       int
		kept        int
		first, last string
	}{
		{"empty", 0, 0, "", ""},
		{"one", 1, 1, "0", "0"},
		{"full", RecorderSize, RecorderSize, "0", fmt.Sprint(RecorderSize - 1)},
		{"wrapped", RecorderSize + 5, RecorderSize, "5", fmt.Sprint(RecorderSize + 4)},
		{"wrapped twice", 2*RecorderSize + 1, RecorderSize, fmt.Sprint(RecorderSize + 1), fmt.Sprint(2 * RecorderSize)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)
			r := newRecorder(func() time.Time { return clock })
			for i := range tt.added {
				r.add("r1", PhaseTaskStart, fmt.Sprint(i))
				clock = clock.Add(time.Millisecond)
			}
			ps := r.phases()
			if len(ps) != tt.kept {
				t.Fatalf("kept %d phases, want %d", len(ps), tt.kept)
			}
			if tt.kept == 0 {
				return
			}
			if ps[0].Detail != tt.first || ps[len(ps)-1].Detail != tt.last {
				t.Errorf("phases run from %q to %q, want %q to %q", ps[0].Detail, ps[len(ps)-1].Detail, tt.first, tt.last)
			}
			for i := 1; i < len(ps); i++ {
				if !ps[i].At.After(ps[i-1].At) {
					t.Fatalf("phase %d is not after the one before it", i)
				}
			}
			line := r.String()
			if n := strings.Count(line, " | "); n != tt.kept-1 {
				t.Errorf("the log line has %d separators for %d phases", n, tt.kept)
			}
		})
	}
	r := newRecorder(func() time.Time { return time.Date(2026, 1, 2, 15, 4, 5, 6e6, time.UTC) })
	r.add("r1", PhaseSpawn, "pid 7")
	r.add("r1", PhaseReady, "")
	if got, want := r.String(), "15:04:05.006 r1 spawn pid 7 | 15:04:05.006 r1 ready"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
