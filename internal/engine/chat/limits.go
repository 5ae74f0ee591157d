package chat

import (
	"strings"

	"github.com/ardanlabs/jinja"
)

// A template comes from a model file and may be hostile. These helpers
// replace engine operations whose cost the template controls (slicing,
// repetition, range, recursion) with bounded ones that fail with an error.

const (
	maxRangeLen   = 1 << 20 // items range() may make
	maxRepeatLen  = 1 << 24 // bytes or items * may make
	maxMacroDepth = 256     // nested macro calls; Python's recursion limit is about this deep
)

func limitError(what string) error { return &LimitError{Budget: what, Limit: limitOf[what]} }

var limitOf = map[string]int64{"range": maxRangeLen, "repetition": maxRepeatLen, "macro depth": maxMacroDepth}

// boundedHelpers returns the bounded helpers of one render, charging b;
// macroText is the literal text of each macro's body.
func boundedHelpers(b *budget, macroText map[string]int64) map[string]helperFn {
	depth := 0
	return map[string]helperFn{
		"range": func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return pyRange(b, args, kw)
		},
		fnSlice: func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 4 {
				return jinja.Value{}, typeErrorf("slice takes start, stop and step")
			}
			return pySlice(args[0], args[1], args[2], args[3])
		},
		fnMul: binary(func(x, y jinja.Value) (jinja.Value, error) { return pyMul(b, x, y) }),
		fnCall: func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 || !args[0].IsCallable() {
				return jinja.Value{}, typeErrorf("object is not callable")
			}
			if depth >= maxMacroDepth {
				return jinja.Value{}, limitError("macro depth")
			}
			fn := args[0].AsCallable()
			// The macro's own text is written once per call.
			if err := b.emit(macroText[fn.Name]); err != nil {
				return jinja.Value{}, err
			}
			depth++
			defer func() { depth-- }()
			return fn.Fn(args[1:], kwargs)
		},
	}
}

func pyRange(b *budget, args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	for _, a := range args {
		if !a.IsInt() && !a.IsBool() {
			return jinja.Value{}, typeErrorf("'%s' object cannot be interpreted as an integer", pyType(a))
		}
	}
	var start, stop, step int64 = 0, 0, 1
	switch len(args) {
	case 1:
		stop = asInt(args[0])
	case 2, 3:
		start, stop = asInt(args[0]), asInt(args[1])
		if len(args) == 3 {
			step = asInt(args[2])
		}
	default:
		return jinja.Value{}, typeErrorf("range expected 1 to 3 arguments, got %d", len(args))
	}
	if step == 0 {
		return jinja.Value{}, &pyError{Type: "ValueError", Msg: "range() arg 3 must not be zero"}
	}
	n := int64(0)
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		n = (start - stop - step - 1) / -step
	}
	if n > maxRangeLen || n < 0 {
		return jinja.Value{}, limitError("range")
	}
	if err := b.room(n * valueBytes); err != nil {
		return jinja.Value{}, err
	}
	items := make([]jinja.Value, n)
	for i := range items {
		items[i] = jinja.NewInt(start + int64(i)*step)
	}
	return jinja.NewList(items), nil
}

// pySlice is Python's seq[start:stop:step] on lists and strings (by code
// point); None bounds take the defaults.
func pySlice(seq, startV, stopV, stepV jinja.Value) (jinja.Value, error) {
	var runes []rune
	var items []jinja.Value
	var n int64
	switch {
	case seq.IsList():
		items = seq.AsList().Items
		n = int64(len(items))
	case seq.IsString():
		runes = []rune(seq.AsString())
		n = int64(len(runes))
	case seq.IsUndefined():
		return jinja.Undefined(), nil
	default:
		return jinja.Value{}, typeErrorf("'%s' object is not subscriptable", pyType(seq))
	}
	bound := func(v jinja.Value, def int64) (int64, error) {
		if v.IsNone() || v.IsUndefined() {
			return def, nil
		}
		if !v.IsInt() && !v.IsBool() {
			return 0, typeErrorf("slice indices must be integers or None")
		}
		return asInt(v), nil
	}
	step, err := bound(stepV, 1)
	if err != nil {
		return jinja.Value{}, err
	}
	if step == 0 {
		return jinja.Value{}, &pyError{Type: "ValueError", Msg: "slice step cannot be zero"}
	}
	// Python's PySlice_AdjustIndices.
	lo, hi := int64(0), n
	if step < 0 {
		lo, hi = -1, n-1
	}
	adjust := func(v jinja.Value, def int64) (int64, error) {
		i, err := bound(v, def)
		if err != nil || v.IsNone() || v.IsUndefined() {
			return i, err
		}
		if i < 0 {
			i += n
			if i < lo {
				i = lo
			}
		} else if i > hi {
			i = hi
		}
		return i, nil
	}
	startDef, stopDef := int64(0), n
	if step < 0 {
		startDef, stopDef = n-1, -1
	}
	start, err := adjust(startV, startDef)
	if err != nil {
		return jinja.Value{}, err
	}
	stop, err := adjust(stopV, stopDef)
	if err != nil {
		return jinja.Value{}, err
	}
	var idx []int64
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		idx = append(idx, i)
	}
	if seq.IsString() {
		var sb strings.Builder
		for _, i := range idx {
			sb.WriteRune(runes[i])
		}
		return jinja.NewString(sb.String()), nil
	}
	out := make([]jinja.Value, len(idx))
	for k, i := range idx {
		out[k] = items[i]
	}
	return jinja.NewList(out), nil
}

// pyMul is Python's *: numbers, or a string or list repeated.
func pyMul(bud *budget, a, b jinja.Value) (jinja.Value, error) {
	switch {
	case isNumeric(a) && isNumeric(b):
		if a.IsFloat() || b.IsFloat() {
			return jinja.NewFloat(asFloat(a) * asFloat(b)), nil
		}
		return jinja.NewInt(asInt(a) * asInt(b)), nil
	case (a.IsInt() || a.IsBool()) && (b.IsString() || b.IsList()):
		a, b = b, a
	}
	if !(b.IsInt() || b.IsBool()) || !(a.IsString() || a.IsList()) {
		return jinja.Value{}, typeErrorf("unsupported operand type(s) for *: '%s' and '%s'", pyType(a), pyType(b))
	}
	times := max(asInt(b), 0)
	if a.IsString() {
		if times > 0 && int64(len(a.AsString())) > maxRepeatLen/times {
			return jinja.Value{}, limitError("repetition")
		}
		if err := bud.room(int64(len(a.AsString())) * times); err != nil {
			return jinja.Value{}, err
		}
		return jinja.NewString(strings.Repeat(a.AsString(), int(times))), nil
	}
	items := a.AsList().Items
	if times > 0 && int64(len(items)) > maxRepeatLen/times {
		return jinja.Value{}, limitError("repetition")
	}
	if err := bud.room(int64(len(items)) * times * valueBytes); err != nil {
		return jinja.Value{}, err
	}
	out := make([]jinja.Value, 0, int64(len(items))*times)
	for range times {
		out = append(out, items...)
	}
	return jinja.NewList(out), nil
}
