package model

import (
	"errors"
	"math"
	"testing"
)

// TestCacheGrows: a cache allocates for the positions it holds, not for its
// limit, and growing keeps every position: a sequence run through a growing
// cache (a prompt past the first allocation, then single steps across the
// next doublings) gives the same logits, bit for bit, as through a cache
// allocated whole from the start. Past the limit is *ErrCacheFull with the
// cache unchanged.
func TestCacheGrows(t *testing.T) {
	for _, tc := range modelCaches() {
		if tc.name == "Q4_K" {
			continue // the weight type changes nothing here
		}
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openShard(t, tc.model(t), whole, Options{Threads: 2, CacheType: tc.cache})
			const limit = 1100
			growing, whole := s.NewCache(limit), s.NewCache(limit)
			whole.grow(limit)
			if growing.cap != initialPositions || growing.Cap() != limit {
				t.Fatalf("a new cache allocated %d positions (limit %d), want %d", growing.cap, growing.Cap(), initialPositions)
			}
			prompt := make([]int32, 300)
			for i := range prompt {
				prompt[i] = int32(i*7%299 + 1)
			}
			run := func(c *Cache, b Batch) []float32 {
				t.Helper()
				r, err := s.Forward(c, b)
				if err != nil {
					t.Fatal(err)
				}
				return r.Logits
			}
			check := func(step int, got, want []float32) {
				t.Helper()
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("step %d: logit %d is %v through a growing cache, %v through a whole one", step, i, got[i], want[i])
					}
				}
			}
			check(0, run(growing, Batch{Tokens: prompt}), run(whole, Batch{Tokens: prompt}))
			if growing.cap < 300 || growing.cap >= limit {
				t.Fatalf("after 300 positions the cache holds room for %d", growing.cap)
			}
			for step := 1; growing.Len() < limit; step++ {
				tok := []int32{int32(step%298 + 1)}
				check(step, run(growing, Batch{Tokens: tok}), run(whole, Batch{Tokens: tok}))
			}
			if growing.cap != limit {
				t.Fatalf("a full cache allocated %d positions, want its limit %d", growing.cap, limit)
			}
			_, err := s.Forward(growing, Batch{Tokens: []int32{1}})
			if full := new(ErrCacheFull); !errors.As(err, &full) || growing.Len() != limit {
				t.Fatalf("a step past the limit: %v, length %d", err, growing.Len())
			}
		})
	}
}
