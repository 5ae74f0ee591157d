package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// The engine is lenient where Python is strict: it adds None to a string,
// iterates None as empty, finds nothing "in" None, and prints None as "".
// Templates rely on Python's behaviour (a render that should fail must fail),
// so every expression is parsed with jinja2's grammar and printed back with
// those operations routed through helper functions (helpers.go), fully
// parenthesised so that jinja2's precedence, not the engine's, applies.
// Built-in filters that differ from transformers' are renamed to helpers too.

// Names of the helpers the rewritten source calls. The prefix keeps them
// apart from template variables.
const (
	fnAdd    = "skulk_add"
	fnConcat = "skulk_concat"
	fnIn     = "skulk_in"
	fnIter   = "skulk_iter"
	fnStr    = "skulk_str"
	fnSlice  = "skulk_slice"
	fnMul    = "skulk_mul"
	fnCall   = "skulk_call"
	fnPrefix = "skulk_"
)

// replacedFilters are engine filters that differ from transformers'; a use
// of one is renamed to the helper of the same name with fnPrefix.
// replace and indent are replaced for their cost: the helpers check the
// size of the result before they build it.
var replacedFilters = map[string]bool{"tojson": true, "string": true, "join": true, "replace": true, "indent": true}

// replacedMethods are string methods whose result a template can make
// large; "s.NAME(args)" is rewritten to the helper fnPrefix+"m_"+NAME.
// append, insert and update grow a list or dict in place: the helpers
// charge what they add.
var replacedMethods = map[string]bool{"replace": true, "format": true, "append": true, "insert": true, "update": true}

// replacedTests are engine tests that differ from jinja2's; "x is NAME" is
// rewritten to a call of the helper fnPrefix+"is_"+NAME.
var replacedTests = map[string]bool{"iterable": true, "sequence": true, "number": true}

// rewrite normalises newlines as jinja2's lexer does, drops one trailing
// newline (keep_trailing_newline=False) and rewrites every tag.
func rewrite(src string) (string, literals, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")
	pieces, err := splitTags(src)
	if err != nil {
		return "", literals{}, err
	}
	macros := map[string]bool{}
	for _, p := range pieces {
		if toks, err := tokenize(p.text); p.kind == '%' && err == nil && len(toks) > 1 && toks[0].text == "macro" {
			macros[toks[1].text] = true
		}
	}
	lits := countLiterals(pieces)
	var sb strings.Builder
	for i, p := range pieces {
		if p.kind == 0 || p.kind == '#' {
			sb.WriteString(p.open + p.text + p.close)
			continue
		}
		inner, err := rewriteTag(p, macros, lits.body[i])
		if err != nil {
			return "", literals{}, fmt.Errorf("line %d: %w", p.line, err)
		}
		// The engine knows no '+' markers; their lstrip opt-out is lost.
		sb.WriteString(strings.Replace(p.open, "+", "", 1) + " " + inner + " " + strings.Replace(p.close, "+", "", 1))
	}
	return sb.String(), lits, nil
}

// literals are the bytes of literal text a render may write without a
// helper seeing them: the loop bodies' and macro bodies' text, written once
// per iteration or call, which the budget charges as output there.
type literals struct {
	body   map[int]int64    // by piece index of a for tag: the text in its body
	macros map[string]int64 // by macro name: the text in its body
}

// countLiterals sums the text inside each for loop and macro (nested
// blocks' text included, an over-estimate). Unbalanced tags are left to
// the engine's compiler to refuse.
func countLiterals(pieces []piece) literals {
	l := literals{body: map[int]int64{}, macros: map[string]int64{}}
	type open struct {
		at    int
		macro string
	}
	var stack []open
	for i, p := range pieces {
		switch p.kind {
		case 0:
			for _, o := range stack {
				if o.macro != "" {
					l.macros[o.macro] += int64(len(p.text))
				} else {
					l.body[o.at] += int64(len(p.text))
				}
			}
		case '%':
			toks, err := tokenize(p.text)
			if err != nil || len(toks) == 0 {
				continue
			}
			switch toks[0].text {
			case "for":
				stack = append(stack, open{at: i})
			case "macro":
				if len(toks) > 1 {
					stack = append(stack, open{at: i, macro: toks[1].text})
				}
			case "endfor", "endmacro":
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
			}
		}
	}
	return l
}

func rewriteTag(p piece, macros map[string]bool, lit int64) (string, error) {
	toks, err := tokenize(p.text)
	if err != nil {
		return "", err
	}
	if p.kind == '{' {
		ps := &parser{toks: toks, macros: macros}
		e, err := ps.expression(true)
		if err != nil {
			return "", err
		}
		if err := ps.end(); err != nil {
			return "", err
		}
		return fnStr + "(" + e + ")", nil
	}
	return rewriteStatement(toks, macros, lit)
}

// rewriteStatement rewrites the expressions inside a {% %} tag and leaves
// the statement's own syntax as it was.
func rewriteStatement(toks []token, macros map[string]bool, lit int64) (string, error) {
	if len(toks) == 0 {
		return "", fmt.Errorf("empty statement")
	}
	ps := &parser{toks: toks, pos: 1, macros: macros, lit: lit}
	kw := toks[0].text
	switch kw {
	case "if", "elif":
		e, err := ps.expression(true)
		if err != nil {
			return "", err
		}
		return kw + " " + e, ps.end()
	case "for":
		return ps.forStatement()
	case "set":
		return ps.setStatement()
	case "macro":
		return ps.macroStatement()
	}
	return joinTokens(toks), nil
}

// pipe calls a two-operand helper as a filter, "(a)|helper(b)": unlike a
// call it has no comma, and the engine splits macro defaults at commas.
func pipe(helper, a, b string) string {
	return "((" + a + ")|" + helper + "(" + b + "))"
}

// number rewrites a numeric literal into a form the engine reads: no
// underscores, and no exponent (the engine stops a number at the "e").
func number(lit string) (string, error) {
	lit = strings.ReplaceAll(lit, "_", "")
	if !strings.ContainsAny(lit, "eE") {
		return lit, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return "", fmt.Errorf("bad number %q", lit)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s, nil
}

func joinTokens(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.text
	}
	return strings.Join(parts, " ")
}

// parser is a recursive-descent parser over jinja2's expression grammar
// (jinja2/parser.py) that returns the rewritten source of what it parsed.
type parser struct {
	toks   []token
	pos    int
	macros map[string]bool // names the template defines as macros
	lit    int64           // a for tag's body text (countLiterals)
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{kind: tkOp, text: ""}
}

func (p *parser) peekAt(n int) token {
	if p.pos+n < len(p.toks) {
		return p.toks[p.pos+n]
	}
	return token{kind: tkOp, text: ""}
}

func (p *parser) isOp(s string) bool   { t := p.peek(); return t.kind == tkOp && t.text == s }
func (p *parser) isName(s string) bool { t := p.peek(); return t.kind == tkName && t.text == s }

func (p *parser) expect(s string) error {
	if !p.isOp(s) {
		return p.unexpected("expected " + s)
	}
	p.pos++
	return nil
}

func (p *parser) unexpected(what string) error {
	if p.pos >= len(p.toks) {
		return fmt.Errorf("%s, found end of tag", what)
	}
	return fmt.Errorf("%s, found %q", what, p.peek().text)
}

func (p *parser) end() error {
	if p.pos < len(p.toks) {
		return p.unexpected("unexpected token")
	}
	return nil
}

// expression parses a conditional expression (or, with condexpr false, an
// or-expression, as a for loop's iterable is parsed).
func (p *parser) expression(condexpr bool) (string, error) {
	if !condexpr {
		return p.or()
	}
	e, err := p.or()
	if err != nil {
		return "", err
	}
	for p.isName("if") {
		p.pos++
		cond, err := p.or()
		if err != nil {
			return "", err
		}
		if p.isName("else") {
			p.pos++
			alt, err := p.expression(true)
			if err != nil {
				return "", err
			}
			e = "(" + e + " if " + cond + " else " + alt + ")"
		} else {
			e = "(" + e + " if " + cond + ")"
		}
	}
	return e, nil
}

func (p *parser) or() (string, error) {
	return p.chain("or", p.and)
}

func (p *parser) and() (string, error) {
	return p.chain("and", p.not)
}

func (p *parser) chain(op string, next func() (string, error)) (string, error) {
	e, err := next()
	if err != nil {
		return "", err
	}
	for p.isName(op) {
		p.pos++
		r, err := next()
		if err != nil {
			return "", err
		}
		e = "(" + e + " " + op + " " + r + ")"
	}
	return e, nil
}

func (p *parser) not() (string, error) {
	if p.isName("not") {
		p.pos++
		e, err := p.not()
		if err != nil {
			return "", err
		}
		return "(not " + e + ")", nil
	}
	return p.compare()
}

func (p *parser) compare() (string, error) {
	e, err := p.math1()
	if err != nil {
		return "", err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == tkOp && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">="):
			p.pos++
			r, err := p.math1()
			if err != nil {
				return "", err
			}
			e = "(" + e + " " + t.text + " " + r + ")"
		case t.kind == tkName && t.text == "in":
			p.pos++
			r, err := p.math1()
			if err != nil {
				return "", err
			}
			e = pipe(fnIn, e, r)
		case t.kind == tkName && t.text == "not" && p.peekAt(1).kind == tkName && p.peekAt(1).text == "in":
			p.pos += 2
			r, err := p.math1()
			if err != nil {
				return "", err
			}
			e = "(not " + pipe(fnIn, e, r) + ")"
		default:
			return e, nil
		}
	}
}

// math1 is + and -; jinja2 binds ~ tighter than these.
func (p *parser) math1() (string, error) {
	e, err := p.concat()
	if err != nil {
		return "", err
	}
	for p.isOp("+") || p.isOp("-") {
		op := p.peek().text
		p.pos++
		r, err := p.concat()
		if err != nil {
			return "", err
		}
		if op == "+" {
			e = pipe(fnAdd, e, r)
		} else {
			e = "(" + e + " - " + r + ")"
		}
	}
	return e, nil
}

func (p *parser) concat() (string, error) {
	e, err := p.math2()
	if err != nil {
		return "", err
	}
	for p.isOp("~") {
		p.pos++
		r, err := p.math2()
		if err != nil {
			return "", err
		}
		e = pipe(fnConcat, e, r)
	}
	return e, nil
}

func (p *parser) math2() (string, error) {
	e, err := p.pow()
	if err != nil {
		return "", err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		op := p.peek().text
		p.pos++
		r, err := p.pow()
		if err != nil {
			return "", err
		}
		if op == "*" {
			e = pipe(fnMul, e, r)
		} else {
			e = "(" + e + " " + op + " " + r + ")"
		}
	}
	return e, nil
}

func (p *parser) pow() (string, error) {
	e, err := p.unary(true)
	if err != nil {
		return "", err
	}
	for p.isOp("**") {
		p.pos++
		r, err := p.unary(true)
		if err != nil {
			return "", err
		}
		e = "(" + e + " ** " + r + ")"
	}
	return e, nil
}

func (p *parser) unary(withFilter bool) (string, error) {
	var e string
	var err error
	switch {
	case p.isOp("-") || p.isOp("+"):
		op := p.peek().text
		p.pos++
		inner, err := p.unary(false)
		if err != nil {
			return "", err
		}
		e = "(" + op + inner + ")"
	default:
		e, err = p.primary()
		if err != nil {
			return "", err
		}
	}
	e, err = p.postfix(e)
	if err != nil {
		return "", err
	}
	if withFilter {
		return p.filterExpr(e)
	}
	return e, nil
}

func (p *parser) primary() (string, error) {
	t := p.peek()
	switch t.kind {
	case tkName:
		p.pos++
		switch t.text {
		case "True", "true":
			return "true", nil
		case "False", "false":
			return "false", nil
		case "None", "none":
			return "none", nil
		}
		return t.text, nil
	case tkString:
		p.pos++
		s := t.text
		// Adjacent literals are one string in jinja2.
		for p.peek().kind == tkString {
			s = pipe(fnConcat, s, p.peek().text)
			p.pos++
		}
		return s, nil
	case tkNumber:
		p.pos++
		return number(t.text)
	}
	switch t.text {
	case "(":
		p.pos++
		items, tuple, err := p.list(")")
		if err != nil {
			return "", err
		}
		if tuple {
			// The engine has no tuples; a list behaves the same in templates.
			return "[" + strings.Join(items, ", ") + "]", nil
		}
		if len(items) == 0 {
			return "", p.unexpected("empty parentheses")
		}
		return "(" + items[0] + ")", nil
	case "[":
		p.pos++
		items, _, err := p.list("]")
		if err != nil {
			return "", err
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	case "{":
		p.pos++
		return p.dict()
	}
	return "", p.unexpected("expected an expression")
}

// list parses comma-separated expressions up to closer; tuple reports a
// comma (a one-element tuple needs one).
func (p *parser) list(closer string) ([]string, bool, error) {
	var items []string
	tuple := false
	for !p.isOp(closer) {
		if len(items) > 0 {
			if err := p.expect(","); err != nil {
				return nil, false, err
			}
			tuple = true
			if p.isOp(closer) {
				break
			}
		}
		e, err := p.expression(true)
		if err != nil {
			return nil, false, err
		}
		items = append(items, e)
	}
	p.pos++
	return items, tuple, nil
}

func (p *parser) dict() (string, error) {
	var items []string
	for !p.isOp("}") {
		if len(items) > 0 {
			if err := p.expect(","); err != nil {
				return "", err
			}
			if p.isOp("}") {
				break
			}
		}
		k, err := p.expression(true)
		if err != nil {
			return "", err
		}
		if err := p.expect(":"); err != nil {
			return "", err
		}
		v, err := p.expression(true)
		if err != nil {
			return "", err
		}
		items = append(items, k+": "+v)
	}
	p.pos++
	return "{" + strings.Join(items, ", ") + "}", nil
}

func (p *parser) postfix(e string) (string, error) {
	for {
		switch {
		case p.isOp("."):
			p.pos++
			t := p.peek()
			if t.kind != tkName && t.kind != tkNumber {
				return "", p.unexpected("expected an attribute name")
			}
			p.pos++
			if replacedMethods[t.text] && p.isOp("(") {
				p.pos++
				args, err := p.callArgs()
				if err != nil {
					return "", err
				}
				e = "((" + e + ")|" + fnPrefix + "m_" + t.text + "(" + args + "))"
				continue
			}
			e += "." + t.text
		case p.isOp("["):
			p.pos++
			parts, err := p.subscript()
			if err != nil {
				return "", err
			}
			if len(parts) == 1 {
				e += "[" + parts[0] + "]"
				continue
			}
			// The engine's slicing loops over the bounds as written, which
			// a hostile template can make endless; the helper does not.
			for len(parts) < 3 {
				parts = append(parts, "")
			}
			for i, part := range parts {
				if part == "" {
					parts[i] = "none"
				}
			}
			e = "((" + e + ")|" + fnSlice + "(" + strings.Join(parts, ", ") + "))"
		case p.isOp("("):
			p.pos++
			args, err := p.callArgs()
			if err != nil {
				return "", err
			}
			if p.macros[e] {
				// Counted, so that endless recursion is an error, not a
				// stack overflow.
				if args != "" {
					args = ", " + args
				}
				e = fnCall + "(" + e + args + ")"
				continue
			}
			e += "(" + args + ")"
		default:
			return e, nil
		}
	}
}

// subscript parses the inside of [...]: an index (one part) or a slice
// (two or three parts, "" where left out).
func (p *parser) subscript() ([]string, error) {
	var parts []string
	cur := ""
	for {
		switch {
		case p.isOp("]"):
			p.pos++
			parts = append(parts, cur)
			if len(parts) == 1 && cur == "" {
				return nil, p.unexpected("empty subscript")
			}
			return parts, nil
		case p.isOp(":"):
			p.pos++
			parts = append(parts, cur)
			cur = ""
			if len(parts) > 2 {
				return nil, p.unexpected("too many ':' in slice")
			}
		default:
			if cur != "" {
				return nil, p.unexpected("expected ] or :")
			}
			e, err := p.expression(true)
			if err != nil {
				return nil, err
			}
			cur = e
		}
	}
}

// callArgs parses call arguments after "(" through ")".
func (p *parser) callArgs() (string, error) {
	var args []string
	for !p.isOp(")") {
		if len(args) > 0 {
			if err := p.expect(","); err != nil {
				return "", err
			}
			if p.isOp(")") {
				break
			}
		}
		prefix := ""
		if p.peek().kind == tkName && p.peekAt(1).kind == tkOp && p.peekAt(1).text == "=" {
			prefix = p.peek().text + "="
			p.pos += 2
		} else if p.isOp("*") || p.isOp("**") {
			return "", p.unexpected("unpacking arguments are not supported")
		}
		e, err := p.expression(true)
		if err != nil {
			return "", err
		}
		args = append(args, prefix+e)
	}
	p.pos++
	return strings.Join(args, ", "), nil
}

// filterExpr parses the filters, tests and calls that follow a unary
// expression.
func (p *parser) filterExpr(e string) (string, error) {
	for {
		switch {
		case p.isOp("|"):
			p.pos++
			name, err := p.dottedName()
			if err != nil {
				return "", err
			}
			if replacedFilters[name] {
				name = fnPrefix + name
			}
			args := ""
			if p.isOp("(") {
				p.pos++
				a, err := p.callArgs()
				if err != nil {
					return "", err
				}
				args = "(" + a + ")"
			}
			e = "(" + e + ")|" + name + args
		case p.isName("is"):
			p.pos++
			neg := ""
			if p.isName("not") {
				p.pos++
				neg = "not "
			}
			name, err := p.dottedName()
			if err != nil {
				return "", err
			}
			args := ""
			switch t := p.peek(); {
			case p.isOp("("):
				p.pos++
				a, err := p.callArgs()
				if err != nil {
					return "", err
				}
				args = "(" + a + ")"
			case t.kind == tkName && t.text != "else" && t.text != "or" && t.text != "and",
				t.kind == tkString, t.kind == tkNumber, p.isOp("["), p.isOp("{"):
				// jinja2 takes one bare argument: "is sameas false".
				a, err := p.primary()
				if err != nil {
					return "", err
				}
				a, err = p.postfix(a)
				if err != nil {
					return "", err
				}
				args = "(" + a + ")"
			}
			if replacedTests[name] {
				// The helper takes the tested value first, then the test's arguments.
				call := fnPrefix + "is_" + name + "(" + e
				if args != "" && args != "()" {
					call += ", " + args[1:len(args)-1]
				}
				e = "(" + neg + call + "))"
				continue
			}
			e = "(" + e + " is " + neg + name + args + ")"
		case p.isOp("("):
			p.pos++
			a, err := p.callArgs()
			if err != nil {
				return "", err
			}
			e += "(" + a + ")"
		default:
			return e, nil
		}
	}
}

func (p *parser) dottedName() (string, error) {
	t := p.peek()
	if t.kind != tkName {
		return "", p.unexpected("expected a name")
	}
	p.pos++
	name := t.text
	for p.isOp(".") && p.peekAt(1).kind == tkName {
		name += "." + p.peekAt(1).text
		p.pos += 2
	}
	return name, nil
}

// forStatement: for TARGETS in ITER [if COND] [recursive]
func (p *parser) forStatement() (string, error) {
	start := p.pos
	for p.pos < len(p.toks) && !p.isName("in") {
		p.pos++
	}
	if p.pos >= len(p.toks) {
		return "", fmt.Errorf("for loop without 'in'")
	}
	targets := strings.ReplaceAll(joinTokens(p.toks[start:p.pos]), " ,", ",")
	p.pos++
	iter, err := p.iterable()
	if err != nil {
		return "", err
	}
	// The helper charges each iteration a step and the body's literal text.
	out := "for " + targets + " in " + pipe(fnIter, iter, strconv.FormatInt(p.lit, 10))
	if p.isName("if") {
		p.pos++
		cond, err := p.expression(true)
		if err != nil {
			return "", err
		}
		out += " if " + cond
	}
	if p.isName("recursive") {
		p.pos++
		out += " recursive"
	}
	return out, p.end()
}

// iterable parses a for loop's iterable: a tuple of or-expressions.
func (p *parser) iterable() (string, error) {
	first, err := p.expression(false)
	if err != nil {
		return "", err
	}
	if !p.isOp(",") {
		return first, nil
	}
	items := []string{first}
	for p.isOp(",") {
		p.pos++
		if p.pos >= len(p.toks) || p.isName("if") || p.isName("recursive") {
			break
		}
		e, err := p.expression(false)
		if err != nil {
			return "", err
		}
		items = append(items, e)
	}
	return "[" + strings.Join(items, ", ") + "]", nil
}

// setStatement: set TARGET = EXPR, or the block form "set TARGET".
func (p *parser) setStatement() (string, error) {
	start := p.pos
	for p.pos < len(p.toks) && !p.isOp("=") {
		p.pos++
	}
	if p.pos >= len(p.toks) {
		return joinTokens(p.toks), nil
	}
	target := joinTokens(p.toks[start:p.pos])
	target = strings.ReplaceAll(target, " . ", ".")
	p.pos++
	e, err := p.expression(true)
	if err != nil {
		return "", err
	}
	if p.isOp(",") {
		return "", p.unexpected("tuple assignment is not supported")
	}
	return "set " + target + " = " + e, p.end()
}

// macroStatement: macro NAME(PARAM[=DEFAULT], ...)
func (p *parser) macroStatement() (string, error) {
	t := p.peek()
	if t.kind != tkName {
		return "", p.unexpected("expected a macro name")
	}
	p.pos++
	if err := p.expect("("); err != nil {
		return "", err
	}
	var params []string
	for !p.isOp(")") {
		if len(params) > 0 {
			if err := p.expect(","); err != nil {
				return "", err
			}
		}
		pt := p.peek()
		if pt.kind != tkName {
			return "", p.unexpected("expected a parameter name")
		}
		p.pos++
		param := pt.text
		if p.isOp("=") {
			p.pos++
			d, err := p.expression(true)
			if err != nil {
				return "", err
			}
			param += "=" + d
		}
		params = append(params, param)
	}
	p.pos++
	return "macro " + t.text + "(" + strings.Join(params, ", ") + ")", p.end()
}
