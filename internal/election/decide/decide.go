// Package decide is master election as a pure step function: given one
// node's view of the membership and the log positions its members
// advertise, it says who should be master and whether this node must raise
// the term to take the role. Every node runs it on its own view; views agree
// once membership has converged, so every node names the same master.
//
// The rules (DESIGN.md, "Election"): the current master keeps the role
// while it is alive (stability: no change when nodes join); when it is gone
// the live member with the most advanced log (term, then index) wins, then
// the longest-lived (earliest start), then the lowest node id; every
// election raises the term, so events of a deposed master carry a lower
// term and are rejected. Between two masters (a healed partition) the
// higher term wins and the other steps down.
//
// A member whose log lost history (damage on its disk, not acknowledged by
// an operator) is ranked by what it is known to hold, the position where
// the loss begins, not by the position it reports: it wins only when no
// other member holds more of that history, and loses a tie to a member
// whose log is whole. Should it claim the role while alone (its history is
// all there is), it keeps it only until a member appears that holds more of
// the history it lost and did not get it from this claim; that member then
// takes the role in a higher term and the lossy node resyncs from it.
package decide

import (
	"github.com/skulk/skulk/internal/ids"
)

// Member is one live member as this node sees it.
type Member struct {
	Node ids.NodeID
	// Term and Index are the member's log position: the term and index of
	// the last event it holds.
	Term  ids.Term
	Index ids.Index
	// StartedAtUnixMs is when the member's process started (longevity).
	StartedAtUnixMs int64
	// MasterOf is the term in which the member claims to be master, or 0.
	MasterOf ids.Term
	// Compatible is false for members of another network version, which
	// never take part.
	Compatible bool
	// Master is the master the member's log names at its last event.
	Master ids.NodeID
	// Lost, when set, says the member's log lost history after a position.
	Lost *Loss
}

// Loss is where a member's log lost its history: after index After, whose
// event was of term Term.
type Loss struct {
	After ids.Index
	Term  ids.Term
}

// held is the log position a member is known to hold.
func (m Member) held() (ids.Term, ids.Index) {
	if m.Lost != nil {
		return m.Lost.Term, m.Lost.After
	}
	return m.Term, m.Index
}

// holdsMore reports whether a's log is known to hold more than b's.
func holdsMore(a, b Member) bool {
	at, ai := a.held()
	bt, bi := b.held()
	return at > bt || at == bt && ai > bi
}

// View is what one node knows when it decides.
type View struct {
	Self    ids.NodeID
	Members []Member // live members, including Self
}

// Outcome is the decision.
type Outcome struct {
	Master ids.NodeID // who should be master; empty when no member is eligible
	// Term is the term the master serves in: the claimed term when a
	// master keeps its role, or the highest term seen plus one for a new
	// election.
	Term ids.Term
	// Elect is true when Self must take the role by raising the term.
	Elect bool
	// StepDown is true when Self claims the role but another master with a
	// higher term (or the same term and a lower id) holds it.
	StepDown bool
	// Claimed is true when Master already claims the role; otherwise Master
	// is only who should elect itself, and the others wait for it.
	Claimed bool
}

// better reports whether a is preferred over b as a new master.
func better(a, b Member) bool {
	if holdsMore(a, b) || holdsMore(b, a) {
		return holdsMore(a, b)
	}
	if (a.Lost == nil) != (b.Lost == nil) {
		return a.Lost == nil
	}
	if a.StartedAtUnixMs != b.StartedAtUnixMs {
		return a.StartedAtUnixMs < b.StartedAtUnixMs
	}
	return a.Node < b.Node
}

// Decide applies the election rules to a view.
func Decide(v View) Outcome {
	var (
		claimant  *Member // the live claimed master with the highest term
		best      *Member // the best candidate for a new election
		maxTerm   ids.Term
		selfClaim ids.Term
	)
	for i := range v.Members {
		m := &v.Members[i]
		if !m.Compatible {
			continue
		}
		maxTerm = max(maxTerm, m.Term, m.MasterOf)
		if m.Node == v.Self {
			selfClaim = m.MasterOf
		}
		if m.MasterOf > 0 && (claimant == nil || m.MasterOf > claimant.MasterOf ||
			(m.MasterOf == claimant.MasterOf && m.Node < claimant.Node)) {
			claimant = m
		}
		if best == nil || better(*m, *best) {
			best = m
		}
	}
	if claimant != nil && !outheld(claimant, v.Members) {
		out := Outcome{Master: claimant.Node, Term: claimant.MasterOf, Claimed: true}
		out.StepDown = selfClaim > 0 && claimant.Node != v.Self
		return out
	}
	if best == nil {
		return Outcome{}
	}
	return Outcome{Master: best.Node, Term: maxTerm + 1, Elect: best.Node == v.Self}
}

// outheld reports whether a claimant whose log lost history must give the
// role up: a member whose log is whole holds more of the history the
// claimant lost, and did not get it from the claimant (its log does not end
// in the claimant's reign; it may end in a term of the same number that
// another master led, while the claimant was away).
func outheld(c *Member, members []Member) bool {
	if c.Lost == nil {
		return false
	}
	for _, m := range members {
		fromClaimant := m.Term >= c.MasterOf && m.Master == c.Node
		if m.Compatible && m.Lost == nil && !fromClaimant && holdsMore(m, *c) {
			return true
		}
	}
	return false
}

// NextTerm is the term a node takes the master role in: the term the
// election decided, but always above the term of its own log and above the
// highest term it stored (one a truncated or damaged log no longer shows),
// so that no node serves two histories under one term.
func NextTerm(decided, logTerm, stored ids.Term) ids.Term {
	return max(decided, logTerm+1, stored+1)
}
