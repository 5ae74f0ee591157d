package chat

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// helpers returns the functions the rewritten source calls and the globals
// transformers installs, bound to one render's clock.
func helpers(now time.Time, b *budget, macroText map[string]int64) map[string]jinja.Value {
	fns := map[string]helperFn{
		fnAdd: binary(func(x, y jinja.Value) (jinja.Value, error) { return pyAdd(b, x, y) }),
		fnConcat: binary(func(x, y jinja.Value) (jinja.Value, error) {
			l, r := pyStr(x), pyStr(y)
			if err := b.room(int64(len(l)) + int64(len(r))); err != nil {
				return jinja.Value{}, err
			}
			return jinja.NewString(l + r), nil
		}),
		fnIn: binary(pyIn),
		fnIter: func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 2 || !args[1].IsInt() {
				return jinja.Value{}, fmt.Errorf("internal: loop helper got %d arguments", len(args))
			}
			// Each iteration is a step and writes the body's text; both
			// are charged before a string's characters become a list.
			var n int64
			switch v := args[0]; {
			case v.IsList():
				n = int64(v.AsList().Len())
			case v.IsDict():
				n = int64(len(v.AsDict().Keys))
			case v.IsString():
				n = int64(utf8.RuneCountInString(v.AsString()))
			}
			if err := b.step(n); err != nil {
				return jinja.Value{}, err
			}
			if err := b.emit(n * args[1].AsInt()); err != nil {
				return jinja.Value{}, err
			}
			if err := b.room(n * valueBytes); err != nil {
				return jinja.Value{}, err
			}
			return pyIter(args[0])
		},
		fnStr: unaryFn(func(v jinja.Value) (jinja.Value, error) {
			s := pyStr(v)
			return jinja.NewString(s), b.emit(int64(len(s)))
		}),

		fnPrefix + "tojson": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return tojsonFilter(b, args, kw)
		},
		fnPrefix + "string": unaryFn(func(v jinja.Value) (jinja.Value, error) { return jinja.NewString(pyStr(v)), nil }),
		fnPrefix + "join": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return joinFilter(b, args, kw)
		},
		fnPrefix + "replace": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return replaceFilter(b, args, kw)
		},
		fnPrefix + "m_replace": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return replaceFilter(b, args, kw)
		},
		fnPrefix + "indent": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return indentFilter(b, args, kw)
		},
		fnPrefix + "m_format": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) { return formatMethod(b, args) },
		fnPrefix + "m_append": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return growMethod(b, "append", args)
		},
		fnPrefix + "m_insert": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return growMethod(b, "insert", args)
		},
		fnPrefix + "m_update": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return growMethod(b, "update", args)
		},

		fnPrefix + "is_iterable": unaryFn(func(v jinja.Value) (jinja.Value, error) {
			// jinja2's Undefined iterates (as empty), None does not.
			return jinja.NewBool(v.IsList() || v.IsDict() || v.IsString() || v.IsUndefined()), nil
		}),
		fnPrefix + "is_sequence": unaryFn(func(v jinja.Value) (jinja.Value, error) {
			// jinja2 asks for len() and [], which strings and dicts have.
			return jinja.NewBool(v.IsList() || v.IsDict() || v.IsString()), nil
		}),
		fnPrefix + "is_number": unaryFn(func(v jinja.Value) (jinja.Value, error) {
			// Python's bool is a Number.
			return jinja.NewBool(isNumeric(v)), nil
		}),

		"raise_exception": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			msg := ""
			if len(args) > 0 {
				msg = pyStr(args[0])
			}
			return jinja.Value{}, &TemplateError{Message: msg}
		},
		"strftime_now": func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 || !args[0].IsString() {
				return jinja.Value{}, typeErrorf("strftime_now() takes one format string")
			}
			if now.IsZero() {
				return jinja.Value{}, ErrNoClock
			}
			return jinja.NewString(strftime(args[0].AsString(), now)), nil
		},
	}
	for name, fn := range boundedHelpers(b, macroText) {
		fns[name] = fn
	}
	out := make(map[string]jinja.Value, len(fns))
	for name, fn := range fns {
		out[name] = jinja.NewCallable(name, b.wrap(fn))
	}
	return out
}

func binary(f func(a, b jinja.Value) (jinja.Value, error)) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 2 {
			return jinja.Value{}, fmt.Errorf("internal: operator helper got %d operands", len(args))
		}
		return f(args[0], args[1])
	}
}

func unaryFn(f func(v jinja.Value) (jinja.Value, error)) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Value{}, fmt.Errorf("internal: helper got %d arguments", len(args))
		}
		return f(args[0])
	}
}

func isNumeric(v jinja.Value) bool { return v.IsInt() || v.IsFloat() || v.IsBool() }

func asFloat(v jinja.Value) float64 {
	switch {
	case v.IsFloat():
		return v.AsFloat()
	case v.IsInt():
		return float64(v.AsInt())
	case v.IsBool() && v.AsBool():
		return 1
	}
	return 0
}

func asInt(v jinja.Value) int64 {
	if v.IsInt() {
		return v.AsInt()
	}
	if v.IsBool() && v.AsBool() {
		return 1
	}
	return 0
}

// pyAdd is Python's +.
func pyAdd(bud *budget, a, b jinja.Value) (jinja.Value, error) {
	switch {
	case a.IsUndefined() || b.IsUndefined():
		return jinja.Value{}, &pyError{Type: "UndefinedError", Msg: "an operand of + is undefined"}
	case a.IsString() && b.IsString():
		if err := bud.room(int64(len(a.AsString())) + int64(len(b.AsString()))); err != nil {
			return jinja.Value{}, err
		}
		return jinja.NewString(a.AsString() + b.AsString()), nil
	case a.IsList() && b.IsList():
		if err := bud.room(int64(a.AsList().Len()+b.AsList().Len()) * valueBytes); err != nil {
			return jinja.Value{}, err
		}
		items := append(append([]jinja.Value{}, a.AsList().Items...), b.AsList().Items...)
		return jinja.NewList(items), nil
	case isNumeric(a) && isNumeric(b):
		if a.IsFloat() || b.IsFloat() {
			return jinja.NewFloat(asFloat(a) + asFloat(b)), nil
		}
		return jinja.NewInt(asInt(a) + asInt(b)), nil
	case a.IsString() || a.IsList():
		return jinja.Value{}, typeErrorf("can only concatenate %s (not %q) to %s", pyType(a), pyType(b), pyType(a))
	}
	return jinja.Value{}, typeErrorf("unsupported operand type(s) for +: '%s' and '%s'", pyType(a), pyType(b))
}

// pyIn is Python's "item in container".
func pyIn(item, container jinja.Value) (jinja.Value, error) {
	switch {
	case container.IsString():
		if !item.IsString() {
			return jinja.Value{}, typeErrorf("'in <string>' requires string as left operand, not %s", pyType(item))
		}
		return jinja.NewBool(strings.Contains(container.AsString(), item.AsString())), nil
	case container.IsList():
		for _, v := range container.AsList().Items {
			if pyEqual(v, item) {
				return jinja.NewBool(true), nil
			}
		}
		return jinja.NewBool(false), nil
	case container.IsDict():
		return jinja.NewBool(item.IsString() && container.AsDict().Has(item.AsString())), nil
	case container.IsUndefined():
		// jinja2's Undefined iterates as empty.
		return jinja.NewBool(false), nil
	}
	return jinja.Value{}, typeErrorf("argument of type '%s' is not iterable", pyType(container))
}

// pyIter is what a for loop may iterate: lists, dict keys, string
// characters, and (as jinja2's Undefined) nothing.
func pyIter(v jinja.Value) (jinja.Value, error) {
	switch {
	case v.IsList():
		return v, nil
	case v.IsDict():
		keys := v.AsDict().Keys
		items := make([]jinja.Value, len(keys))
		for i, k := range keys {
			items[i] = jinja.NewString(k)
		}
		return jinja.NewList(items), nil
	case v.IsString():
		var items []jinja.Value
		for _, r := range v.AsString() {
			items = append(items, jinja.NewString(string(r)))
		}
		return jinja.NewList(items), nil
	case v.IsUndefined():
		return jinja.NewList(nil), nil
	}
	return jinja.Value{}, typeErrorf("'%s' object is not iterable", pyType(v))
}

// pyEqual is Python's == on JSON-like values.
func pyEqual(a, b jinja.Value) bool {
	switch {
	case isNumeric(a) && isNumeric(b):
		return asFloat(a) == asFloat(b)
	case a.IsString() && b.IsString():
		return a.AsString() == b.AsString()
	case a.IsNone() && b.IsNone(), a.IsUndefined() && b.IsUndefined():
		return true
	case a.IsList() && b.IsList():
		x, y := a.AsList().Items, b.AsList().Items
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case a.IsDict() && b.IsDict():
		x, y := a.AsDict(), b.AsDict()
		if x.Len() != y.Len() {
			return false
		}
		for _, k := range x.Keys {
			yv, ok := y.Get(k)
			if !ok || !pyEqual(x.Data[k], yv) {
				return false
			}
		}
		return true
	}
	return false
}

func pyType(v jinja.Value) string {
	switch {
	case v.IsNone():
		return "NoneType"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	case v.IsUndefined():
		return "Undefined"
	}
	return "function"
}

// pyStr is Python's str() as jinja2 applies it to printed values.
func pyStr(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return ""
	case v.IsString():
		return v.AsString()
	}
	return pyRepr(v)
}

// pyRepr is Python's repr() of JSON-like values.
func pyRepr(v jinja.Value) string {
	switch {
	case v.IsUndefined():
		return "Undefined"
	case v.IsNone():
		return "None"
	case v.IsBool():
		if v.AsBool() {
			return "True"
		}
		return "False"
	case v.IsInt():
		return strconv.FormatInt(v.AsInt(), 10)
	case v.IsFloat():
		return pyFloatRepr(v.AsFloat())
	case v.IsString():
		return pyStringRepr(v.AsString())
	case v.IsList():
		parts := make([]string, 0, v.AsList().Len())
		for _, item := range v.AsList().Items {
			parts = append(parts, pyRepr(item))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case v.IsDict():
		d := v.AsDict()
		parts := make([]string, 0, d.Len())
		for _, k := range d.Keys {
			parts = append(parts, pyStringRepr(k)+": "+pyRepr(d.Data[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return "<function>"
}

// pyStringRepr quotes s as Python's repr(str) does.
func pyStringRepr(s string) string {
	quote := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var sb strings.Builder
	sb.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			sb.WriteString(`\\`)
		case r == rune(quote):
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case unicode.IsPrint(r):
			sb.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&sb, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&sb, `\u%04x`, r)
		default:
			fmt.Fprintf(&sb, `\U%08x`, r)
		}
	}
	sb.WriteByte(quote)
	return sb.String()
}

// joinFilter is jinja2's join: str() of each item, optionally of an attribute.
func joinFilter(b *budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, typeErrorf("join: missing value")
	}
	sep := ""
	if len(args) > 1 {
		sep = pyStr(args[1])
	} else if d, ok := kwargs["d"]; ok {
		sep = pyStr(d)
	}
	attr, hasAttr := kwargs["attribute"]
	if len(args) > 2 {
		attr, hasAttr = args[2], true
	}
	list, err := pyIter(args[0])
	if err != nil {
		return jinja.Value{}, err
	}
	parts := make([]string, 0, list.AsList().Len())
	size := int64(len(sep)) * int64(max(list.AsList().Len()-1, 0))
	for _, item := range list.AsList().Items {
		if hasAttr {
			item = attribute(item, pyStr(attr))
		}
		p := pyStr(item)
		// Each part is checked as it is made: a long list of large
		// items must fail before it is all in memory.
		if size += int64(len(p)); b.room(size) != nil {
			return jinja.Value{}, b.room(size)
		}
		parts = append(parts, p)
	}
	return jinja.NewString(strings.Join(parts, sep)), nil
}

// replaceFilter is jinja2's replace filter and str.replace: the result's
// size is checked before it is built.
func replaceFilter(b *budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 3 {
		return jinja.Value{}, typeErrorf("replace() takes the old and the new string")
	}
	s, old, repl := pyStr(args[0]), pyStr(args[1]), pyStr(args[2])
	count := int64(-1)
	if len(args) > 3 {
		count = asInt(args[3])
	}
	if c, ok := kwargs["count"]; ok {
		count = asInt(c)
	}
	n := int64(strings.Count(s, old))
	if old == "" {
		n = int64(utf8.RuneCountInString(s)) + 1
	}
	if count >= 0 && count < n {
		n = count
	}
	if err := b.room(int64(len(s)) + n*int64(len(repl))); err != nil {
		return jinja.Value{}, err
	}
	return jinja.NewString(strings.Replace(s, old, repl, int(max(min(count, int64(len(s))+1), -1)))), nil
}

// indentFilter is jinja2's indent(width=4, first=False, blank=False).
func indentFilter(b *budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	s := pyStr(args[0])
	pad := " "
	width := int64(4)
	get := func(i int, name string) (jinja.Value, bool) {
		if v, ok := kwargs[name]; ok {
			return v, true
		}
		if len(args) > i {
			return args[i], true
		}
		return jinja.Value{}, false
	}
	padStr := ""
	if w, ok := get(1, "width"); ok {
		if w.IsString() {
			padStr, pad = w.AsString(), ""
		} else {
			width = max(asInt(w), 0)
		}
	}
	first, _ := get(2, "first")
	blank, _ := get(3, "blank")
	lines := strings.Split(s, "\n")
	unit := int64(len(padStr))
	if pad != "" {
		unit = width
	}
	if err := b.room(int64(len(s)) + int64(len(lines))*unit); err != nil {
		return jinja.Value{}, err
	}
	if pad != "" {
		padStr = strings.Repeat(pad, int(width))
	}
	for i, line := range lines {
		if (i == 0 && !first.IsTruthy()) || (line == "" && !blank.IsTruthy()) {
			continue
		}
		lines[i] = padStr + line
	}
	return jinja.NewString(strings.Join(lines, "\n")), nil
}

// growMethod is list.append(x), list.insert(i, x) and dict.update(d), as
// the engine does them, charging the slots they add.
func growMethod(b *budget, name string, args []jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, fmt.Errorf("internal: %s without its object", name)
	}
	obj, args := args[0], args[1:]
	switch {
	case name == "append" && obj.IsList():
		if len(args) > 0 {
			if err := b.charge(valueBytes); err != nil {
				return jinja.Value{}, err
			}
			obj.AsList().Append(args[0])
		}
	case name == "insert" && obj.IsList():
		if len(args) > 1 {
			if err := b.charge(valueBytes); err != nil {
				return jinja.Value{}, err
			}
			l := obj.AsList()
			i := min(max(int(asInt(args[0])), 0), l.Len())
			l.Items = append(l.Items, jinja.Value{})
			copy(l.Items[i+1:], l.Items[i:])
			l.Items[i] = args[1]
		}
	case name == "update" && obj.IsDict():
		if len(args) > 0 && args[0].IsDict() {
			other := args[0].AsDict()
			if err := b.charge(int64(len(other.Keys)) * 2 * valueBytes); err != nil {
				return jinja.Value{}, err
			}
			d := obj.AsDict()
			for _, k := range other.Keys {
				d.Set(k, other.Data[k])
			}
		}
	default:
		return jinja.Value{}, &pyError{Type: "AttributeError", Msg: fmt.Sprintf("'%s' object has no attribute '%s'", pyType(obj), name)}
	}
	return jinja.None(), nil
}

// formatMethod is the engine's str.format: "{i}" takes the i-th argument
// everywhere and each "{}" the next, checked for size before each step.
func formatMethod(b *budget, args []jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || !args[0].IsString() {
		return jinja.Value{}, typeErrorf("format() applies to a string")
	}
	result := args[0].AsString()
	for i, arg := range args[1:] {
		placeholder := "{" + strconv.Itoa(i) + "}"
		v := pyStr(arg)
		grow := int64(strings.Count(result, placeholder)+1) * int64(len(v))
		if err := b.room(int64(len(result)) + grow); err != nil {
			return jinja.Value{}, err
		}
		result = strings.ReplaceAll(result, placeholder, v)
		result = strings.Replace(result, "{}", v, 1)
	}
	return jinja.NewString(result), nil
}

// attribute follows a dotted path through dicts (and list indexes), as
// jinja2's make_attrgetter does.
func attribute(v jinja.Value, path string) jinja.Value {
	for _, part := range strings.Split(path, ".") {
		switch {
		case v.IsDict():
			next, ok := v.AsDict().Get(part)
			if !ok {
				return jinja.Undefined()
			}
			v = next
		case v.IsList():
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= v.AsList().Len() {
				return jinja.Undefined()
			}
			v = v.AsList().Get(i)
		default:
			return jinja.Undefined()
		}
	}
	return v
}
