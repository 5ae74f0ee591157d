// Package state provides the replicated cluster State and the pure function
// Apply that advances it by one indexed event.
//
// Apply is deterministic: no I/O, clocks or randomness (times arrive inside
// events), so every node that applies the same events in the same order
// holds byte-identical State, which Hash checks. Apply never mutates its
// input; it copies what it touches (copy-on-write) and shares the rest, so
// States are cheap to keep and safe to read from many goroutines. Callers
// must treat a State, including its maps and slices, as read-only.
//
// The master validates an event by applying it to its own State before
// indexing it: an event Apply rejects is never ordered, so followers, which
// apply exactly what the master ordered, reject nothing but out-of-order or
// stale input. Rejections are typed (ErrOutOfOrder, ErrStaleTerm,
// ErrUnknownInstance, ErrBusy, ...) and wrapped in *ApplyError.
//
// Encode and Decode give the canonical snapshot form (CBOR core
// deterministic encoding); Decode is strict and checks the State's
// invariants. This package imports no os, net, time, sync, log or math/rand
// (TestPureImports enforces it).
package state
