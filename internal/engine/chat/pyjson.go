package chat

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// jsonOptions are the arguments of transformers' tojson filter, which is
// json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False) and never HTML-escapes.
type jsonOptions struct {
	ensureASCII bool
	indent      string // "" with indented=false means one line
	indented    bool
	itemSep     string
	keySep      string
	sortKeys    bool
	sepsSet     bool
	limit       int64  // the most bytes the output may take (the render's room)
	budget      int64  // the budget limit stands for, for the error
	budgetName  string // and its name
}

// tojsonFilter is the tojson filter transformers installs.
func tojsonFilter(b *budget, args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Value{}, errors.New("tojson: missing value")
	}
	opt := jsonOptions{}
	// Python's positional order after x: ensure_ascii, indent, separators, sort_keys.
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	given := map[string]jinja.Value{}
	for i, a := range args[1:] {
		if i >= len(names) {
			return jinja.Value{}, fmt.Errorf("tojson: too many arguments")
		}
		given[names[i]] = a
	}
	for k, v := range kwargs {
		if _, dup := given[k]; dup {
			return jinja.Value{}, fmt.Errorf("tojson: got multiple values for argument %q", k)
		}
		given[k] = v
	}
	for k, v := range given {
		switch k {
		case "ensure_ascii":
			opt.ensureASCII = v.IsTruthy()
		case "sort_keys":
			opt.sortKeys = v.IsTruthy()
		case "indent":
			switch {
			case v.IsNone() || v.IsUndefined():
			case v.IsInt():
				if v.AsInt() > b.lim.Output { // one indented line would pass it
					return jinja.Value{}, &LimitError{Budget: "output", Limit: b.lim.Output}
				}
				if err := b.room(v.AsInt()); err != nil {
					return jinja.Value{}, err
				}
				opt.indented = true
				opt.indent = strings.Repeat(" ", int(max(v.AsInt(), 0)))
			case v.IsString():
				opt.indented = true
				opt.indent = v.AsString()
			default:
				return jinja.Value{}, fmt.Errorf("tojson: indent must be an int or a string")
			}
		case "separators":
			if v.IsNone() || v.IsUndefined() {
				continue
			}
			if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
				return jinja.Value{}, fmt.Errorf("tojson: separators must be two strings")
			}
			opt.itemSep = v.AsList().Get(0).AsString()
			opt.keySep = v.AsList().Get(1).AsString()
			opt.sepsSet = true
		default:
			return jinja.Value{}, fmt.Errorf("tojson: unexpected keyword argument %q", k)
		}
	}
	if !opt.sepsSet {
		// Python's defaults: no space before a newline when indenting.
		opt.itemSep, opt.keySep = ", ", ": "
		if opt.indented {
			opt.itemSep = ","
		}
	}
	// The text may not pass the room left in the memory budget, nor the
	// output budget: JSON that large could never be part of a prompt.
	opt.limit, opt.budget, opt.budgetName = b.lim.Alloc-b.alloc, b.lim.Alloc, "memory"
	if b.lim.Output < opt.limit {
		opt.limit, opt.budget, opt.budgetName = b.lim.Output, b.lim.Output, "output"
	}
	var sb strings.Builder
	if err := writeJSON(&sb, args[0], &opt, 0); err != nil {
		return jinja.Value{}, err
	}
	return jinja.NewString(sb.String()), nil
}

func writeJSON(sb *strings.Builder, v jinja.Value, opt *jsonOptions, depth int) error {
	// Checked per value, and in newline per line: between two checks the
	// output grows by at most one scalar and one separator.
	if int64(sb.Len()) > opt.limit {
		return &LimitError{Budget: opt.budgetName, Limit: opt.budget}
	}
	switch {
	case v.IsNone():
		sb.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case v.IsInt():
		sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		sb.WriteString(pyFloatJSON(v.AsFloat()))
	case v.IsString():
		writeJSONString(sb, v.AsString(), opt.ensureASCII)
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			sb.WriteString("[]")
			return nil
		}
		sb.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				sb.WriteString(opt.itemSep)
			}
			newline(sb, opt, depth+1)
			if err := writeJSON(sb, item, opt, depth+1); err != nil {
				return err
			}
		}
		newline(sb, opt, depth)
		sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.Keys
		if opt.sortKeys {
			keys = append([]string(nil), keys...)
			sort.Strings(keys)
		}
		if len(keys) == 0 {
			sb.WriteString("{}")
			return nil
		}
		sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				sb.WriteString(opt.itemSep)
			}
			newline(sb, opt, depth+1)
			writeJSONString(sb, k, opt.ensureASCII)
			sb.WriteString(opt.keySep)
			if err := writeJSON(sb, d.Data[k], opt, depth+1); err != nil {
				return err
			}
		}
		newline(sb, opt, depth)
		sb.WriteByte('}')
	case v.IsUndefined():
		return errors.New("Object of type Undefined is not JSON serializable")
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", v.String())
	}
	return nil
}

func newline(sb *strings.Builder, opt *jsonOptions, depth int) {
	if !opt.indented {
		return
	}
	sb.WriteByte('\n')
	for range depth {
		if int64(sb.Len()) > opt.limit {
			return // writeJSON reports it
		}
		sb.WriteString(opt.indent)
	}
}

// writeJSONString escapes like Python's json module: the short escapes for
// \" \\ \n \r \t \b \f, \u00XX for other control bytes, and (ensure_ascii
// only) \uXXXX with surrogate pairs for everything beyond ASCII.
func writeJSONString(sb *strings.Builder, s string, ensureASCII bool) {
	sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(sb, `\u%04x`, r)
			case ensureASCII && r > 0x7e:
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(sb, `\u%04x`, r)
				}
			default:
				sb.WriteRune(r)
			}
		}
	}
	sb.WriteByte('"')
}

// pyFloatJSON is Python's float.__repr__, which json.dumps uses, with its
// spellings of the non-finite values.
func pyFloatJSON(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

// pyFloatRepr formats like Python's repr(float): the shortest round-trip
// digits, positional between 1e-4 and 1e16, always with a '.' or exponent.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
