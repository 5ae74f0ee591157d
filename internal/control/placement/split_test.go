package placement

import (
	"fmt"
	"slices"
	"testing"
)

func cumOf(layers ...int64) []int64 {
	cum := make([]int64, len(layers)+1)
	for i, b := range layers {
		cum[i+1] = addSat(cum[i], b)
	}
	return cum
}

func uniform(n int, b int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = b
	}
	return out
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name     string
		layers   []int64
		capacity []int64
		want     []int
		tail     int64
	}{
		{"one_rank_takes_all", uniform(7, 10), []int64{5}, []int{0, 7}, 0},
		{"equal_halves", uniform(10, 10), []int64{4, 4}, []int{0, 5, 10}, 0},
		{"three_to_seven", uniform(10, 10), []int64{300, 700}, []int{0, 3, 7 + 3}, 0},
		{"one_two_one", uniform(8, 10), []int64{1, 2, 1}, []int{0, 2, 6, 8}, 0},
		// 10 layers × 1/3 = 3.33 → 3; × 2/3 = 6.67 → 7.
		{"thirds_round_to_nearest", uniform(10, 10), []int64{1, 1, 1}, []int{0, 3, 7, 10}, 0},
		// 5 layers split evenly: the ideal boundary 2.5 ties and goes left.
		{"tie_goes_to_the_earlier_boundary", uniform(5, 10), []int64{1, 1}, []int{0, 2, 5}, 0},
		// A node with no room still gets one layer; it then fails admission.
		{"no_room_still_one_layer", uniform(6, 10), []int64{0, 100}, []int{0, 1, 6}, 0},
		{"negative_room_still_one_layer", uniform(6, 10), []int64{100, -5}, []int{0, 5, 6}, 0},
		{"all_without_room_split_evenly", uniform(6, 10), []int64{0, 0, -1}, []int{0, 2, 4, 6}, 0},
		{"as_many_ranks_as_layers", uniform(3, 10), []int64{1, 1000, 1}, []int{0, 1, 2, 3}, 0},
		// The byte share counts, not the layer count: the last layer weighs
		// as much as the first four, so an even split puts it alone.
		{"uneven_layers_split_by_bytes", []int64{10, 10, 10, 10, 40}, []int64{1, 1}, []int{0, 4, 5}, 0},
		{"weightless_layers_split_by_count", uniform(4, 0), []int64{3, 1}, []int{0, 3, 4}, 0},
		{"huge_values_do_not_overflow", uniform(4, 1<<61), []int64{1 << 62, 1 << 62}, []int{0, 2, 4}, 0},
		// The head's reads count on the last rank: 10 layers of 10 and a
		// head of 20 split evenly by work put 6 layers first (60 | 40+20).
		{"the_head_counts_on_the_last_rank", uniform(10, 10), []int64{1, 1}, []int{0, 6, 10}, 20},
		{"huge_head_still_leaves_one_layer", uniform(4, 10), []int64{1, 1}, []int{0, 3, 4}, 1 << 40},
		{"negative_tail_counts_nothing", uniform(10, 10), []int64{1, 1}, []int{0, 5, 10}, -7},
		{"weightless_layers_ignore_the_tail", uniform(4, 0), []int64{1, 1}, []int{0, 2, 4}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := split(cumOf(tt.layers...), tt.capacity, tt.tail); !slices.Equal(got, tt.want) {
				t.Errorf("split = %v, want %v", got, tt.want)
			}
		})
	}
}

// Every width from 1 to the layer count, with capacities that vary wildly,
// covers every layer exactly once with no empty rank.
func TestSplitCoversEveryLayerOnce(t *testing.T) {
	for _, layers := range []int{1, 2, 3, 7, 32, 80} {
		for ranks := 1; ranks <= min(layers, 6); ranks++ {
			t.Run(fmt.Sprintf("%d_layers_%d_ranks", layers, ranks), func(t *testing.T) {
				capacity := make([]int64, ranks)
				for r := range capacity {
					capacity[r] = int64((r*7919)%13) << (r * 5) // skewed, some zero
				}
				b := split(cumOf(uniform(layers, 100)...), capacity, 250)
				if len(b) != ranks+1 || b[0] != 0 || b[ranks] != layers {
					t.Fatalf("bounds %v do not span [0, %d] in %d ranks", b, layers, ranks)
				}
				for r := range ranks {
					if b[r+1] <= b[r] {
						t.Fatalf("rank %d is empty: bounds %v", r, b)
					}
				}
			})
		}
	}
}
