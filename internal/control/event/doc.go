// Package event provides the control plane's wire vocabulary: Commands
// (imperative requests any node sends to the master), Events (past-tense
// facts the master orders into its log), IndexedEvent (an Event at a log
// position), their strict codecs, and the admission allowlist that decides
// which events a worker may submit as local facts.
//
// # Wire format
//
// Every Command and Event travels in an envelope, a CBOR map
//
//	{"kind": text, "body": map}
//
// and an IndexedEvent adds its log position:
//
//	{"term": uint, "index": uint, "kind": text, "body": map}
//
// "kind" is the Go type name of the body (KindInstanceCreated is
// "InstanceCreated"); body keys are the snake_case names in the struct tags.
// Encoding uses CBOR core deterministic encoding (RFC 8949 §4.2.1), so one
// value has one byte string; the event log and the state hash depend on
// that. Kind strings and field names are part of the format: never rename or
// reuse one; add a new kind instead.
//
// Decoding is strict (seed CTRL-13): an unknown kind is an *UnknownKindError;
// unknown fields, duplicate map keys, indefinite lengths, tags, trailing
// bytes and inputs over MaxEncodedBytes are a *DecodeError; a decoded value
// that breaks its own rules (an invalid id, a placement with a gap) is an
// *InvalidError. The types also carry JSON tags, for documents such as GET
// /state that show them; no JSON form of the envelope exists.
//
// Values are immutable by convention: slices inside an Event or Command are
// never modified after construction, so values may be shared between
// goroutines. The package holds no mutable state. Anyone may import it.
package event
