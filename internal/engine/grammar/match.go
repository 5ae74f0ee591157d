package grammar

// The matcher is a nondeterministic pushdown automaton over bytes. A state
// is a set of stacks; a stack is an immutable linked list of frames, the top
// frame first, so stepping shares every frame below the top. A frame is a
// position inside one node: an object between keys, a string after three
// code points, a number after its dot.
//
// When a frame starts a child value it first moves itself to the phase after
// that value ("return address") and pushes the child; a finished child is
// simply dropped. Containers, strings and literal leaves are dropped as soon
// as their last byte is read. Numbers, and literals that are a prefix of a
// longer literal, cannot know they are finished until the next byte: such a
// frame is "accepting", and step offers the byte both to it and to the frame
// below.

// phases
const (
	// root
	rootStart uint8 = iota
	rootDone
)

const (
	// object
	objOpen    uint8 = iota // after '{'
	objKey                  // inside a key
	objColon                // after the key's closing quote
	objValue                // after ':'
	objValueSp              // after ": "
	objNext                 // after a value
	objComma                // after ','
	objCommaSp              // after ", "
)

const (
	// array
	arrOpen    uint8 = iota // after '['
	arrNext                 // after an item
	arrComma                // after ','
	arrCommaSp              // after ", "
)

const (
	// number
	numMinus uint8 = iota // "-"
	numZero               // "0" or "-0"
	numInt                // "12"
	numDot                // "1."
	numFrac               // "1.5"
	numE                  // "1e"
	numESign              // "1e-"
	numExp                // "1e5"
)

// string lexer states
const (
	lexNormal uint8 = iota
	lexEsc          // after '\'
	lexU1           // \u, expecting hex 1
	lexU2d          // \uD, expecting 0-7 (no surrogates)
	lexU2           // expecting hex 2
	lexU3
	lexU4
	lexC1 // one continuation byte 80-BF left
	lexC2 // two left
	lexC3 // three left
	lexE0 // after E0: A0-BF, then one more
	lexED // after ED: 80-9F, then one more
	lexF0 // after F0: 90-BF, then two more
	lexF4 // after F4: 80-8F, then two more
)

type frame struct {
	n     *node
	phase uint8
	lex   uint8
	sub   int32  // trie node (keys, literals) or property index (objColon..objValueSp; -1 = extra)
	count int32  // array items or string code points, saturating
	seen  bitset // object: declared properties written so far
}

type stack struct {
	f    frame
	next *stack
}

func frameEqual(a, b *frame) bool {
	return a.n == b.n && a.phase == b.phase && a.lex == b.lex && a.sub == b.sub &&
		a.count == b.count && a.seen.equal(b.seen)
}

func stackEqual(a, b *stack) bool {
	for a != b {
		if a == nil || b == nil || !frameEqual(&a.f, &b.f) {
			return false
		}
		a, b = a.next, b.next
	}
	return true
}

// arena hands out stack cells. A nil arena allocates on the heap; a
// non-nil one reuses fixed-size chunks until reset, for the throwaway
// states of a mask walk.
type arena struct {
	chunks [][]stack
	ci, i  int
}

const arenaChunk = 4096

func (a *arena) push(f frame, next *stack) *stack {
	if a == nil {
		return &stack{f: f, next: next}
	}
	if a.ci == len(a.chunks) {
		a.chunks = append(a.chunks, make([]stack, arenaChunk))
	}
	c := &a.chunks[a.ci][a.i]
	c.f, c.next = f, next
	if a.i++; a.i == arenaChunk {
		a.ci, a.i = a.ci+1, 0
	}
	return c
}

func (a *arena) reset() {
	if a != nil {
		a.ci, a.i = 0, 0
	}
}

// replace returns s with its top frame set to f, sharing s itself when
// nothing changed.
func (a *arena) replace(s *stack, f frame) *stack {
	if f.n == s.f.n && f.phase == s.f.phase && f.lex == s.f.lex && f.sub == s.f.sub &&
		f.count == s.f.count && sameSet(f.seen, s.f.seen) {
		return s
	}
	return a.push(f, s.next)
}

func sameSet(a, b bitset) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

// accepting reports whether the top frame may end before the next byte.
func accepting(f *frame) bool {
	switch f.n.kind {
	case kindRoot:
		return f.phase == rootDone
	case kindNumber, kindInteger:
		switch f.phase {
		case numZero, numInt, numFrac, numExp:
			return true
		}
	case kindLiteral:
		return f.n.lit.nodes[f.sub].term >= 0
	}
	return false
}

// complete reports whether the stack holds a whole document.
func complete(s *stack) bool {
	for ; s != nil; s = s.next {
		if !accepting(&s.f) {
			return false
		}
		if s.f.n.kind == kindRoot {
			return true
		}
	}
	return false
}

// step appends to out every stack s becomes by reading b.
func (a *arena) step(s *stack, b byte, out []*stack) []*stack {
	out = a.consume(s, b, out)
	if s.next != nil && accepting(&s.f) {
		out = a.step(s.next, b, out)
	}
	return out
}

// stepSet reads b in every stack of in, appending the distinct results.
func (a *arena) stepSet(in []*stack, b byte, out []*stack) []*stack {
	start := len(out)
	for _, s := range in {
		mark := len(out)
		out = a.step(s, b, out)
		if len(in) == 1 && len(out)-mark <= 1 {
			continue
		}
		// drop duplicates of earlier results
		for i := mark; i < len(out); i++ {
			for j := start; j < i; j++ {
				if stackEqual(out[i], out[j]) {
					out[i] = out[len(out)-1]
					out = out[:len(out)-1]
					i--
					break
				}
			}
		}
	}
	return out
}

func (a *arena) consume(s *stack, b byte, out []*stack) []*stack {
	f := s.f
	n := f.n
	switch n.kind {
	case kindRoot:
		if f.phase == rootStart {
			f.phase = rootDone
			return a.start(a.replace(s, f), n.alts[0], b, out)
		}
	case kindObject:
		return a.object(s, b, out)
	case kindArray:
		return a.array(s, b, out)
	case kindString:
		if f.lex == lexNormal && b == '"' {
			if f.count >= n.minLen {
				out = append(out, s.next)
			}
			return out
		}
		if f.lex == lexNormal && n.lenCap > 0 {
			if n.maxLen >= 0 && f.count >= n.maxLen {
				return out
			}
			f.count = min(f.count+1, n.lenCap)
		}
		nl, ok := lexStep(f.lex, b)
		if !ok {
			return out
		}
		f.lex = nl
		return append(out, a.replace(s, f))
	case kindNumber, kindInteger:
		ph, ok := numStep(f.phase, b, n.kind == kindInteger)
		if ok {
			f.phase = ph
			out = append(out, a.replace(s, f))
		}
	case kindLiteral:
		c := n.lit.child(f.sub, b)
		if c < 0 {
			return out
		}
		if n.lit.leaf(c) {
			return append(out, s.next)
		}
		f.sub = c
		return append(out, a.replace(s, f))
	}
	return out
}

// start pushes the value n onto parent, reading its first byte b.
func (a *arena) start(parent *stack, n *node, b byte, out []*stack) []*stack {
	switch n.kind {
	case kindUnion:
		for _, alt := range n.alts {
			out = a.start(parent, alt, b, out)
		}
	case kindObject:
		if b == '{' {
			out = append(out, a.push(frame{n: n, phase: objOpen}, parent))
		}
	case kindArray:
		if b == '[' {
			out = append(out, a.push(frame{n: n, phase: arrOpen}, parent))
		}
	case kindString:
		if b == '"' {
			out = append(out, a.push(frame{n: n}, parent))
		}
	case kindNumber, kindInteger:
		switch {
		case b == '-':
			out = append(out, a.push(frame{n: n, phase: numMinus}, parent))
		case b == '0':
			out = append(out, a.push(frame{n: n, phase: numZero}, parent))
		case b >= '1' && b <= '9':
			out = append(out, a.push(frame{n: n, phase: numInt}, parent))
		}
	case kindLiteral:
		c := n.lit.child(0, b)
		switch {
		case c < 0:
		case n.lit.leaf(c):
			out = append(out, parent)
		default:
			out = append(out, a.push(frame{n: n, sub: c}, parent))
		}
	}
	return out
}

// keyPossible reports whether another key may follow.
func keyPossible(n *node, seen bitset) bool {
	return n.extra != nil || n.avail.anyNotIn(seen)
}

func (a *arena) object(s *stack, b byte, out []*stack) []*stack {
	f := s.f
	n := f.n
	switch f.phase {
	case objOpen, objNext:
		switch {
		case b == '}':
			if n.required.subset(f.seen) {
				out = append(out, s.next)
			}
		case b == '"' && f.phase == objOpen && keyPossible(n, f.seen):
			f.phase, f.sub, f.lex = objKey, 0, lexNormal
			if n.keys == nil {
				f.sub = -1
			}
			out = append(out, a.replace(s, f))
		case b == ',' && f.phase == objNext && keyPossible(n, f.seen):
			f.phase = objComma
			out = append(out, a.replace(s, f))
		}
	case objComma, objCommaSp:
		switch {
		case b == ' ' && f.phase == objComma:
			f.phase = objCommaSp
			out = append(out, a.replace(s, f))
		case b == '"':
			f.phase, f.sub, f.lex = objKey, 0, lexNormal
			if n.keys == nil {
				f.sub = -1
			}
			out = append(out, a.replace(s, f))
		}
	case objKey:
		return a.key(s, b, out)
	case objColon:
		if b == ':' {
			f.phase = objValue
			out = append(out, a.replace(s, f))
		}
	case objValue, objValueSp:
		if b == ' ' && f.phase == objValue {
			f.phase = objValueSp
			return append(out, a.replace(s, f))
		}
		child := n.extra
		if f.sub >= 0 {
			child = n.props[f.sub]
		}
		f.phase, f.sub = objNext, 0
		out = a.start(a.replace(s, f), child, b, out)
	}
	return out
}

func (a *arena) key(s *stack, b byte, out []*stack) []*stack {
	f := s.f
	n := f.n
	if f.lex == lexNormal && b == '"' {
		p := int32(-1)
		if f.sub >= 0 {
			p = n.keys.nodes[f.sub].term
		}
		switch {
		case p >= 0:
			// a declared name is never an extra key
			if !n.avail.has(p) || f.seen.has(p) {
				return out
			}
			f.seen = f.seen.with(p)
		case n.extra == nil:
			return out
		}
		f.phase, f.sub, f.lex = objColon, p, lexNormal
		return append(out, a.replace(s, f))
	}
	nl, ok := lexStep(f.lex, b)
	if !ok {
		return out
	}
	sub := int32(-1)
	if f.sub >= 0 {
		sub = n.keys.child(f.sub, b)
		if sub >= 0 && n.extra == nil && !n.keys.sub[sub].anyNotIn(f.seen) {
			sub = -1
		}
	}
	if sub < 0 {
		if n.extra == nil {
			return out
		}
		// An undeclared key must not be a declared one spelt with escapes.
		if n.restrictKeys && (f.lex != lexNormal && f.lex < lexC1 || f.lex == lexNormal && b == '\\') {
			return out
		}
	}
	f.sub, f.lex = sub, nl
	return append(out, a.replace(s, f))
}

func (a *arena) array(s *stack, b byte, out []*stack) []*stack {
	f := s.f
	n := f.n
	more := (n.maxItems < 0 || f.count < n.maxItems) && n.item(f.count) != nil
	switch f.phase {
	case arrOpen, arrNext:
		switch {
		case b == ']':
			if f.count >= n.minItems {
				out = append(out, s.next)
			}
		case b == ',' && f.phase == arrNext:
			if more {
				f.phase = arrComma
				out = append(out, a.replace(s, f))
			}
		case f.phase == arrOpen && more:
			return a.item(s, f, b, out)
		}
	case arrComma:
		if b == ' ' {
			f.phase = arrCommaSp
			return append(out, a.replace(s, f))
		}
		return a.item(s, f, b, out)
	case arrCommaSp:
		return a.item(s, f, b, out)
	}
	return out
}

func (a *arena) item(s *stack, f frame, b byte, out []*stack) []*stack {
	child := f.n.item(f.count)
	f.phase = arrNext
	f.count = min(f.count+1, f.n.countCap)
	return a.start(a.replace(s, f), child, b, out)
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'f'
}

// lexStep reads b inside a JSON string (the closing quote is handled by the
// caller). It accepts only valid UTF-8 (no overlongs, surrogates or code
// points past U+10FFFF) and \u escapes outside the surrogate range.
func lexStep(l uint8, b byte) (uint8, bool) {
	switch l {
	case lexNormal:
		switch {
		case b < 0x20 || b == '"':
			return 0, false
		case b == '\\':
			return lexEsc, true
		case b < 0x80:
			return lexNormal, true
		case b >= 0xC2 && b <= 0xDF:
			return lexC1, true
		case b == 0xE0:
			return lexE0, true
		case b == 0xED:
			return lexED, true
		case b >= 0xE1 && b <= 0xEF:
			return lexC2, true
		case b == 0xF0:
			return lexF0, true
		case b >= 0xF1 && b <= 0xF3:
			return lexC3, true
		case b == 0xF4:
			return lexF4, true
		}
		return 0, false
	case lexEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			return lexNormal, true
		case 'u':
			return lexU1, true
		}
		return 0, false
	case lexU1:
		if b == 'd' || b == 'D' {
			return lexU2d, true
		}
		return lexU2, isHex(b)
	case lexU2d:
		return lexU3, b >= '0' && b <= '7'
	case lexU2:
		return lexU3, isHex(b)
	case lexU3:
		return lexU4, isHex(b)
	case lexU4:
		return lexNormal, isHex(b)
	case lexC1:
		return lexNormal, b >= 0x80 && b <= 0xBF
	case lexC2:
		return lexC1, b >= 0x80 && b <= 0xBF
	case lexC3:
		return lexC2, b >= 0x80 && b <= 0xBF
	case lexE0:
		return lexC1, b >= 0xA0 && b <= 0xBF
	case lexED:
		return lexC1, b >= 0x80 && b <= 0x9F
	case lexF0:
		return lexC2, b >= 0x90 && b <= 0xBF
	case lexF4:
		return lexC2, b >= 0x80 && b <= 0x8F
	}
	return 0, false
}

// numStep reads b inside a number that is already in phase p.
func numStep(p, b byte, integer bool) (uint8, bool) {
	digit := b >= '0' && b <= '9'
	switch p {
	case numMinus:
		if b == '0' {
			return numZero, true
		}
		return numInt, digit
	case numZero, numInt:
		switch {
		case digit && p == numInt:
			return numInt, true
		case integer:
			return 0, false
		case b == '.':
			return numDot, true
		case b == 'e' || b == 'E':
			return numE, true
		}
	case numDot, numFrac:
		if digit {
			return numFrac, true
		}
		if p == numFrac && (b == 'e' || b == 'E') {
			return numE, true
		}
	case numE:
		if b == '+' || b == '-' {
			return numESign, true
		}
		return numExp, digit
	case numESign, numExp:
		return numExp, digit
	}
	return 0, false
}
