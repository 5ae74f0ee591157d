package supervise

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	tests := []struct {
		name    string
		max     int
		window  time.Duration
		records []time.Time
		want    []bool // Record's result for each
	}{
		{name: "three_quick_failures_trip", max: 3, window: time.Minute,
			records: []time.Time{at(0), at(10), at(20)}, want: []bool{false, false, true}},
		{name: "spread_failures_never_trip", max: 3, window: time.Minute,
			records: []time.Time{at(0), at(40), at(80), at(120), at(160)}, want: []bool{false, false, false, false, false}},
		{name: "window_edge_is_exclusive", max: 2, window: time.Minute,
			records: []time.Time{at(0), at(60), at(119)}, want: []bool{false, false, true}},
		{name: "trips_again_after_old_ones_expire", max: 2, window: time.Minute,
			records: []time.Time{at(0), at(1), at(100), at(101)}, want: []bool{false, true, false, true}},
		{name: "zero_window_counts_forever", max: 3, window: 0,
			records: []time.Time{at(0), at(1000), at(100000)}, want: []bool{false, false, true}},
		{name: "max_zero_trips_at_once", max: 0, window: time.Minute,
			records: []time.Time{at(0)}, want: []bool{true}},
		{name: "out_of_order_failures", max: 3, window: time.Minute,
			records: []time.Time{at(50), at(10), at(30)}, want: []bool{false, false, true}},
		{name: "stale_out_of_order_failure_ignored", max: 2, window: time.Minute,
			records: []time.Time{at(100), at(0)}, want: []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Breaker{Max: tt.max, Window: tt.window}
			for i, r := range tt.records {
				if got := b.Record(r); got != tt.want[i] {
					t.Fatalf("Record #%d (%v) = %v, want %v", i, r.Sub(t0), got, tt.want[i])
				}
			}
		})
	}
}

func TestBreakerBoundedAndReset(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := Breaker{Max: 3, Window: 0}
	for i := range 1000 {
		b.Record(t0.Add(time.Duration(i) * time.Second))
	}
	if len(b.failures) != 3 {
		t.Fatalf("breaker keeps %d failures, want at most Max=3", len(b.failures))
	}
	if n := b.Failures(t0.Add(time.Hour)); n != 3 {
		t.Fatalf("Failures = %d, want 3", n)
	}
	b.Reset()
	if b.Failures(t0) != 0 || b.Record(t0) {
		t.Fatal("Reset did not forget the failures")
	}
	w := Breaker{Max: 5, Window: time.Minute}
	w.Record(t0)
	w.Record(t0.Add(30 * time.Second))
	if n := w.Failures(t0.Add(70 * time.Second)); n != 1 {
		t.Fatalf("Failures 70s later = %d, want 1 (the first has left the window)", n)
	}
}
