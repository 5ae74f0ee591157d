package decide

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/skulk/skulk/internal/ids"
)

func m(node string, term, index uint64, started int64, masterOf uint64) Member {
	return Member{Node: ids.NodeID(node), Term: ids.Term(term), Index: ids.Index(index), StartedAtUnixMs: started, MasterOf: ids.Term(masterOf), Compatible: true}
}

// follows names the master a member's log names.
func follows(mb Member, master string) Member {
	mb.Master = ids.NodeID(master)
	return mb
}

// lost marks a member's log as having lost its history after (term, index).
func lost(mb Member, term, index uint64) Member {
	mb.Lost = &Loss{After: ids.Index(index), Term: ids.Term(term)}
	return mb
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name    string
		self    string
		members []Member
		want    Outcome
	}{
		{"live master keeps the role", "b", []Member{m("a", 3, 10, 100, 3), m("b", 3, 12, 50, 0), m("c", 3, 12, 10, 0)},
			Outcome{Master: "a", Term: 3, Claimed: true}},
		{"a joiner with a longer log does not take over", "d", []Member{m("a", 3, 10, 100, 3), m("d", 3, 99, 1, 0)},
			Outcome{Master: "a", Term: 3, Claimed: true}},
		{"master gone: most advanced term wins", "b", []Member{m("b", 2, 50, 10, 0), m("c", 3, 1, 90, 0)},
			Outcome{Master: "c", Term: 4}},
		{"then the highest index", "c", []Member{m("b", 3, 40, 10, 0), m("c", 3, 41, 90, 0)},
			Outcome{Master: "c", Term: 4, Elect: true}},
		{"then the longest lived", "b", []Member{m("b", 3, 41, 10, 0), m("c", 3, 41, 90, 0)},
			Outcome{Master: "b", Term: 4, Elect: true}},
		{"then the lowest id", "c", []Member{m("c", 3, 41, 10, 0), m("b", 3, 41, 10, 0)},
			Outcome{Master: "b", Term: 4}},
		{"healed partition: higher term wins, the other steps down", "a", []Member{m("a", 3, 60, 1, 3), m("b", 4, 55, 10, 4), m("c", 4, 55, 20, 0)},
			Outcome{Master: "b", Term: 4, StepDown: true, Claimed: true}},
		{"incompatible members never take part", "b", []Member{{Node: "a", Term: 9, Index: 9, MasterOf: 9}, m("b", 1, 1, 5, 0)},
			Outcome{Master: "b", Term: 2, Elect: true}},
		{"fresh cluster", "a", []Member{m("a", 0, 0, 5, 0), m("b", 0, 0, 6, 0)},
			Outcome{Master: "a", Term: 1, Elect: true}},
		{"nobody eligible", "a", nil, Outcome{}},

		// History lost to damage: ranked by the position where the loss begins.
		{"lost history does not lead over a member holding more", "a", []Member{lost(m("a", 3, 5, 1, 0), 3, 5), m("b", 3, 8, 90, 0)},
			Outcome{Master: "b", Term: 4}},
		{"lost history ranks by the loss, not by what it reports", "b", []Member{lost(m("a", 9, 50, 1, 0), 3, 5), m("b", 3, 8, 90, 0)},
			Outcome{Master: "b", Term: 10, Elect: true}},
		{"a tie goes to the whole log", "a", []Member{lost(m("a", 3, 8, 1, 0), 3, 8), m("b", 3, 8, 90, 0)},
			Outcome{Master: "b", Term: 4}},
		{"lost history alone still leads", "a", []Member{lost(m("a", 3, 5, 1, 0), 3, 5)},
			Outcome{Master: "a", Term: 4, Elect: true}},
		{"lost history leads over members holding less", "a", []Member{lost(m("a", 3, 5, 1, 0), 3, 5), m("b", 0, 0, 90, 0)},
			Outcome{Master: "a", Term: 4, Elect: true}},
		{"an empty joiner does not depose a lossy master", "b", []Member{lost(m("a", 4, 12, 1, 4), 3, 5), m("b", 0, 0, 90, 0)},
			Outcome{Master: "a", Term: 4, Claimed: true}},
		{"nor does a member that followed it", "c", []Member{lost(m("a", 4, 12, 1, 4), 3, 5), follows(m("c", 4, 12, 90, 0), "a")},
			Outcome{Master: "a", Term: 4, Claimed: true}},
		{"a member of the same term under another master takes over", "b", []Member{lost(m("a", 2, 26, 1, 2), 1, 24), follows(m("b", 2, 48, 90, 0), "c")},
			Outcome{Master: "b", Term: 3, Elect: true}},
		{"as does one that followed it before its loss", "b", []Member{lost(m("a", 4, 12, 1, 4), 3, 5), follows(m("b", 3, 9, 90, 0), "a")},
			Outcome{Master: "b", Term: 5, Elect: true}},
		{"a member holding the lost history takes over", "b", []Member{lost(m("a", 4, 12, 1, 4), 3, 5), m("b", 3, 9, 90, 0)},
			Outcome{Master: "b", Term: 5, Elect: true}},
		{"meanwhile the lossy master waits for it", "a", []Member{lost(m("a", 4, 12, 1, 4), 3, 5), m("b", 3, 9, 90, 0)},
			Outcome{Master: "b", Term: 5}},
		{"and steps down once it claims", "a", []Member{lost(m("a", 4, 12, 1, 4), 3, 5), m("b", 5, 10, 90, 5)},
			Outcome{Master: "b", Term: 5, StepDown: true, Claimed: true}},
	}
	for _, c := range cases {
		got := Decide(View{Self: ids.NodeID(c.self), Members: c.members})
		if got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestViewsAgree: any permutation of the same membership gives the same
// master and term on every node, and exactly one node elects itself.
func TestViewsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 500; trial++ {
		n := 1 + rng.IntN(6)
		var members []Member
		for i := 0; i < n; i++ {
			mb := m("n"+strconv.Itoa(i), uint64(rng.IntN(3)), uint64(rng.IntN(4)), int64(rng.IntN(3)), 0)
			if rng.IntN(3) == 0 {
				mb = lost(mb, uint64(rng.IntN(int(mb.Term)+1)), uint64(rng.IntN(int(mb.Index)+1)))
			}
			members = append(members, mb)
		}
		var first Outcome
		electors := 0
		for i := 0; i < n; i++ {
			perm := append([]Member(nil), members...)
			rng.Shuffle(len(perm), func(a, b int) { perm[a], perm[b] = perm[b], perm[a] })
			o := Decide(View{Self: members[i].Node, Members: perm})
			if o.Elect {
				electors++
			}
			o.Elect = false
			if i == 0 {
				first = o
			} else if o != first {
				t.Fatalf("views disagree: %+v vs %+v on %+v", o, first, members)
			}
		}
		if electors != 1 {
			t.Fatalf("%d nodes elect themselves in %+v", electors, members)
		}
	}
}

func TestNextTerm(t *testing.T) {
	tests := []struct {
		name                          string
		decided, logTerm, stored, out ids.Term
	}{
		{"fresh", 1, 0, 0, 1},
		{"as decided", 5, 3, 4, 5},
		{"the log is ahead of the view", 3, 4, 0, 5},
		{"the log was cut back", 4, 3, 7, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextTerm(tt.decided, tt.logTerm, tt.stored); got != tt.out {
				t.Fatalf("NextTerm(%d, %d, %d) = %d, want %d", tt.decided, tt.logTerm, tt.stored, got, tt.out)
			}
		})
	}
}
