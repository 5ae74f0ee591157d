package grammar

import (
	"encoding/json"
	"math/big"
)

// oneOf is enforced as anyOf, which is exact only when no value matches two
// alternatives. disjoint proves that conservatively: a false answer means
// "may overlap", and Compile then refuses the oneOf.

// firstBytes adds to set the bytes a value of n can begin with.
func firstBytes(n *node, set *[256]bool) {
	switch n.kind {
	case kindUnion:
		for _, a := range n.alts {
			firstBytes(a, set)
		}
	case kindObject:
		set['{'] = true
	case kindArray:
		set['['] = true
	case kindString:
		set['"'] = true
	case kindNumber, kindInteger:
		for _, b := range []byte("-0123456789") {
			set[b] = true
		}
	case kindLiteral:
		for _, e := range n.lit.edges[n.lit.nodes[0].first : n.lit.nodes[0].first+n.lit.nodes[0].n] {
			set[e.b] = true
		}
	}
}

// disjoint reports whether no JSON value matches both a and b (false when
// unsure).
func disjoint(a, b *node) bool {
	var fa, fb [256]bool
	firstBytes(a, &fa)
	firstBytes(b, &fb)
	overlap := false
	for i := range fa {
		overlap = overlap || fa[i] && fb[i]
	}
	if !overlap {
		return true
	}
	if a.kind == kindUnion || b.kind == kindUnion {
		as, bs := alternatives(a), alternatives(b)
		for _, x := range as {
			for _, y := range bs {
				if !disjoint(x, y) {
					return false
				}
			}
		}
		return true
	}
	switch {
	case a.kind == kindLiteral && b.kind == kindLiteral:
		for _, x := range a.litVals {
			for _, y := range b.litVals {
				if valueEqual(x, y) {
					return false
				}
			}
		}
		return true
	case a.kind == kindObject && b.kind == kindObject:
		return objectsDisjoint(a, b) || objectsDisjoint(b, a)
	}
	return false
}

func alternatives(n *node) []*node {
	if n.kind == kindUnion {
		return n.alts
	}
	return []*node{n}
}

// objectsDisjoint: some property a requires is either forbidden by b or
// required by b with a disjoint schema.
func objectsDisjoint(a, b *node) bool {
	for i, pa := range a.props {
		if !a.required.has(int32(i)) {
			continue
		}
		name := a.names[i]
		j := -1
		for k, nb := range b.names {
			if nb == name {
				j = k
			}
		}
		switch {
		case j < 0 && b.extra == nil:
			return true // b forbids a required key of a
		case j >= 0 && !b.avail.has(int32(j)):
			return true
		case j >= 0 && disjoint(pa, b.props[j]):
			return true
		case j < 0 && disjoint(pa, b.extra):
			return true
		}
	}
	return false
}

// valueEqual compares decoded JSON values, numbers by exact value.
func valueEqual(x, y any) bool {
	switch x := x.(type) {
	case json.Number:
		yn, ok := y.(json.Number)
		if !ok {
			return false
		}
		rx, okx := new(big.Rat).SetString(x.String())
		ry, oky := new(big.Rat).SetString(yn.String())
		if !okx || !oky {
			return x == yn // unparseable exponents: compare the text
		}
		return rx.Cmp(ry) == 0
	case []any:
		ys, ok := y.([]any)
		if !ok || len(x) != len(ys) {
			return false
		}
		for i := range x {
			if !valueEqual(x[i], ys[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		ym, ok := y.(map[string]any)
		if !ok || len(x) != len(ym) {
			return false
		}
		for k, xv := range x {
			yv, ok := ym[k]
			if !ok || !valueEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return x == y
}
