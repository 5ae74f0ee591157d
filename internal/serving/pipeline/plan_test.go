package pipeline

import (
	"fmt"
	"slices"
	"testing"
)

func it(k Kind, seq uint64) item { return item{kind: k, seq: seq} }

// git is an item of micro-batch group g.
func git(k Kind, seq, g uint64) item { return item{kind: k, seq: seq, group: g} }

func TestPlan(t *testing.T) {
	const (
		O = KindOpen
		P = KindPrefill
		D = KindDecode
		R = KindRelease
	)
	tests := []struct {
		name       string
		pending    []item
		lastDecode bool
		decodeCap  int
		decodeMin  int
		want       batch
	}{
		{"nothing", nil, false, 8, 1, batch{}},
		{"open_first", []item{it(P, 1), it(D, 2), it(O, 3)}, false, 8, 1, batch{O, []int{2}}},
		{"release_first", []item{it(D, 2), it(R, 1)}, false, 8, 1, batch{R, []int{1}}},
		{"open_before_its_chunks", []item{it(O, 1), it(P, 1), it(P, 1)}, false, 8, 1, batch{O, []int{0}}},
		{"chunks_in_order", []item{it(P, 1), it(P, 1)}, false, 8, 1, batch{P, []int{0}}},
		{"release_waits_for_its_step", []item{it(D, 1), it(R, 1)}, false, 8, 1, batch{D, []int{0}}},
		{"decodes_together", []item{it(D, 1), it(P, 4), it(D, 2), it(D, 3)}, false, 8, 1, batch{D, []int{0, 2, 3}}},
		{"decode_cap", []item{it(D, 1), it(D, 2), it(D, 3)}, false, 2, 1, batch{D, []int{0, 1}}},
		{"zero_cap_is_one", []item{it(D, 1), it(D, 2)}, false, 0, 1, batch{D, []int{0}}},
		{"one_step_per_sequence", []item{it(D, 1), it(D, 1), it(D, 2)}, false, 8, 1, batch{D, []int{0, 2}}},
		{"prefill_after_decode", []item{it(D, 1), it(P, 2), it(P, 3)}, true, 8, 1, batch{P, []int{1}}},
		{"decode_after_prefill", []item{it(P, 2), it(D, 1)}, false, 8, 1, batch{D, []int{1}}},
		{"decode_again_without_prefill", []item{it(D, 1)}, true, 8, 1, batch{D, []int{0}}},
		{"one_group", []item{git(D, 1, 1), git(D, 2, 1), git(D, 3, 2), git(D, 4, 2)}, false, 8, 1, batch{D, []int{0, 1}}},
		{"oldest_group_first", []item{git(D, 3, 2), git(D, 1, 1), git(D, 2, 1), git(D, 4, 2)}, false, 8, 1, batch{D, []int{0, 3}}},
		{"group_after_blocked_one", []item{git(D, 1, 1), git(D, 1, 2), git(D, 2, 2)}, false, 8, 1, batch{D, []int{0}}},
		{"group_capped", []item{git(D, 1, 1), git(D, 2, 1), git(D, 3, 1)}, false, 2, 1, batch{D, []int{0, 1}}},
		{"short_group_waits", []item{it(D, 1)}, false, 2, 2, batch{}},
		{"short_group_lets_prefill_run", []item{it(D, 1), it(P, 2)}, false, 2, 2, batch{P, []int{1}}},
		{"full_group_runs", []item{it(D, 1), it(D, 2), it(D, 3)}, false, 2, 2, batch{D, []int{0, 1}}},
		{"min_above_cap_is_cap", []item{it(D, 1), it(D, 2)}, false, 2, 5, batch{D, []int{0, 1}}},
		{"blocked_prefill", []item{it(O, 1), it(P, 1)}, true, 8, 1, batch{O, []int{0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := plan(tt.pending, tt.lastDecode, tt.decodeCap, tt.decodeMin)
			if got.kind != tt.want.kind || !slices.Equal(got.idx, tt.want.idx) {
				t.Fatalf("plan = %v %v, want %v %v", got.kind, got.idx, tt.want.kind, tt.want.idx)
			}
		})
	}
}

func TestHeadDecodeCap(t *testing.T) {
	for _, c := range []struct{ live, ranks, maxBatch, want int }{
		{0, 2, 64, 1}, {1, 2, 64, 1}, {8, 1, 64, 8}, {8, 2, 64, 4}, {8, 3, 64, 3}, {7, 3, 64, 3}, {100, 2, 16, 16}, {4, 0, 64, 4},
	} {
		if got := headDecodeCap(c.live, c.ranks, c.maxBatch); got != c.want {
			t.Errorf("headDecodeCap(%d, %d, %d) = %d, want %d", c.live, c.ranks, c.maxBatch, got, c.want)
		}
	}
}

func TestHeadDecodeMin(t *testing.T) {
	for _, c := range []struct{ inFlight, ranks, decodeCap, want int }{
		{0, 2, 2, 1}, {1, 2, 2, 1}, {2, 2, 2, 2}, {3, 2, 2, 2}, {2, 3, 4, 1}, {3, 3, 4, 4}, {0, 1, 8, 1}, {1, 1, 8, 8},
	} {
		if got := headDecodeMin(c.inFlight, c.ranks, c.decodeCap); got != c.want {
			t.Errorf("headDecodeMin(%d, %d, %d) = %d, want %d", c.inFlight, c.ranks, c.decodeCap, got, c.want)
		}
	}
}

func TestChunks(t *testing.T) {
	prompt := []int32{1, 2, 3, 4, 5, 6, 7}
	for _, c := range []struct {
		size int
		want string
	}{
		{3, "[0+3 3+3 6+1]"}, {7, "[0+7]"}, {100, "[0+7]"}, {1, "[0+1 1+1 2+1 3+1 4+1 5+1 6+1]"}, {0, "[0+1 1+1 2+1 3+1 4+1 5+1 6+1]"},
	} {
		var parts []string
		var joined []int32
		for _, it := range chunks(9, prompt, c.size) {
			if it.kind != KindPrefill || it.seq != 9 || len(it.tokens) != it.rows {
				t.Fatalf("chunk %+v", it)
			}
			parts = append(parts, fmt.Sprintf("%d+%d", it.pos, it.rows))
			joined = append(joined, it.tokens...)
		}
		if got := fmt.Sprint(parts); got != c.want || !slices.Equal(joined, prompt) {
			t.Errorf("size %d: %s, want %s", c.size, got, c.want)
		}
	}
}

func TestWithoutAndDropSeq(t *testing.T) {
	p := []item{it(KindDecode, 1), it(KindPrefill, 2), it(KindDecode, 3), it(KindRelease, 2)}
	got := without(slices.Clone(p), []int{0, 2})
	if len(got) != 2 || got[0].seq != 2 || got[1].kind != KindRelease {
		t.Fatalf("without: %+v", got)
	}
	got = dropSeq(slices.Clone(p), 2)
	if len(got) != 2 || got[0].seq != 1 || got[1].seq != 3 {
		t.Fatalf("dropSeq: %+v", got)
	}
}

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		name              string
		tok               int32
		eog               bool
		generated, budget int
		want              verdict
	}{
		{"feed", 5, false, 0, 64, feed},
		{"last_of_budget", 5, false, 63, 64, endLength},
		{"budget_of_one", 5, false, 0, 1, endLength},
		{"end_of_generation", 2, true, 10, 64, endStop},
		{"end_of_generation_at_budget", 2, true, 63, 64, endStop},
		{"no_token", -1, false, 0, 64, endNoToken},
		{"outside_vocabulary", 512, false, 0, 64, endNoToken},
	} {
		if got := judge(c.tok, 512, c.eog, c.generated, c.budget); got != c.want {
			t.Errorf("%s: judge = %d, want %d", c.name, got, c.want)
		}
	}
}
