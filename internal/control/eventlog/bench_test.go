package eventlog

import (
	"testing"
)

// BenchmarkAppend measures appends of 256-byte records on the real disk.
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name string
		sync SyncPolicy
	}{
		{"fsync=every", SyncEveryAppend},
		{"fsync=batched", SyncManual},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{Sync: bc.sync})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { l.Close() })
			payload := make([]byte, 256)
			b.SetBytes(int64(len(payload)))
			b.ReportAllocs()
			var i uint64
			for b.Loop() {
				i++
				if err := l.Append(i, payload); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "records/s")
			if l.Status().Degraded {
				b.Fatalf("degraded: %v", l.Status().Cause)
			}
		})
	}
}

// BenchmarkIterate measures reading records back across archives.
func BenchmarkIterate(b *testing.B) {
	l, err := Open(b.TempDir(), Options{Sync: SyncManual, RotateBytes: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	payload := make([]byte, 256)
	const n = 50000
	for i := uint64(1); i <= n; i++ {
		if err := l.Append(i, payload); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(n * 256)
	b.ReportAllocs()
	for b.Loop() {
		it, err := l.Iterate(1)
		if err != nil {
			b.Fatal(err)
		}
		c := 0
		for it.Next() {
			c++
		}
		if it.Err() != nil || c != n {
			b.Fatalf("read %d: %v", c, it.Err())
		}
		it.Close()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
