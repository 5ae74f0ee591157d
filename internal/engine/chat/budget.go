package chat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ardanlabs/jinja"
)

// Limits are the budgets of one render. A template comes from a model file
// and may be hostile; a render that would pass a budget ends with a
// *LimitError instead.
//
// What they bound: every operation the rewrite routes through a helper
// (output of {{ }}, ~, +, *, slicing, range, join, replace, indent, format,
// tojson, append, insert, update, macro calls, the iterable of every for
// loop) counts a step and
// charges the bytes it allocates; every loop iteration counts a step and
// charges the literal text of its body as output; every macro call charges
// its body's literal text. The context is checked at every step. What they
// do not bound: engine work between two steps that no helper sees (a list
// or dict literal, an engine filter such as upper, sort or map, list.pop),
// which is at most proportional to the template's size and the values it
// is given, per step.
type Limits struct {
	Steps  int64         // helper calls plus loop iterations
	Output int64         // bytes the render may produce
	Alloc  int64         // bytes the helpers may allocate, in all
	Time   time.Duration // wall-clock time of one render
}

// DefaultLimits are far above what real templates need (the largest
// golden conversation renders in a few hundred steps, and no context window
// holds 16 MiB of prompt) and low enough that a hostile render ends within
// a second and a half, having allocated at most about Alloc + 2*Output +
// 512 bytes per step (the engine's own work per step).
var DefaultLimits = Limits{Steps: 1 << 20, Output: 16 << 20, Alloc: 128 << 20, Time: 1500 * time.Millisecond}

// LimitError is a render refused for passing one of its budgets: the
// template (or the input with it) would take more than a render may. The
// API answers it as a 400 with code template_limit.
type LimitError struct {
	Budget string // "steps", "output", "memory", "time", "range", "repetition", "macro depth"
	Limit  int64  // the budget's size (nanoseconds for time)
}

func (e *LimitError) Error() string {
	if e.Budget == "time" {
		return fmt.Sprintf("chat: the template exceeds its %s budget (%v)", e.Budget, time.Duration(e.Limit))
	}
	return fmt.Sprintf("chat: the template exceeds its %s budget (%d)", e.Budget, e.Limit)
}

// budget is one render's account. It is used by one goroutine.
type budget struct {
	ctx    context.Context
	parent context.Context // the caller's: its end is a cancellation, not a limit
	lim    Limits
	steps  int64
	output int64
	alloc  int64
}

// valueBytes estimates one jinja.Value slot in a list.
const valueBytes = 48

func (b *budget) step(n int64) error {
	b.steps += n
	if b.steps > b.lim.Steps || n < 0 {
		return &LimitError{Budget: "steps", Limit: b.lim.Steps}
	}
	return b.live()
}

// live reports the end of the render's context: a cancellation by the
// caller as itself, the render's own deadline as the time budget.
func (b *budget) live() error {
	if err := b.ctx.Err(); err != nil {
		if b.parent.Err() != nil {
			return b.parent.Err()
		}
		return &LimitError{Budget: "time", Limit: int64(b.lim.Time)}
	}
	return nil
}

// room says whether n more bytes fit the allocation budget, without
// charging them: a helper asks before it builds a large value.
func (b *budget) room(n int64) error {
	if n < 0 || n > b.lim.Alloc-b.alloc {
		return &LimitError{Budget: "memory", Limit: b.lim.Alloc}
	}
	return nil
}

func (b *budget) charge(n int64) error {
	if err := b.room(n); err != nil {
		return err
	}
	b.alloc += n
	return nil
}

func (b *budget) emit(n int64) error {
	b.output += n
	if n < 0 || b.output > b.lim.Output {
		return &LimitError{Budget: "output", Limit: b.lim.Output}
	}
	return nil
}

// sizeOf is what building v allocated, shallowly: nested values are shared.
func sizeOf(v jinja.Value) int64 {
	switch {
	case v.IsString():
		return int64(len(v.AsString()))
	case v.IsList():
		return int64(v.AsList().Len()) * valueBytes
	case v.IsDict():
		return int64(len(v.AsDict().Keys)) * 2 * valueBytes
	}
	return 0
}

type helperFn = func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error)

// wrap counts a step for each call of fn, and charges what it returns.
func (b *budget) wrap(fn helperFn) helperFn {
	return func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
		if err := b.step(1); err != nil {
			return jinja.Value{}, err
		}
		v, err := fn(args, kwargs)
		if err != nil {
			return v, err
		}
		return v, b.charge(sizeOf(v))
	}
}

// asLimit finds the budget error in a render's error chain.
func asLimit(err error) (*LimitError, bool) {
	var le *LimitError
	return le, errors.As(err, &le)
}
