package gguf

import (
	"errors"
	"fmt"
)

// The reader's limits. A count or length is first checked against the bytes
// that remain (a file cannot describe more than it holds); these constants
// bound what the file size alone does not: how deep arrays nest, how much a
// header may hold, and how much memory parsing may take per byte of it.
const (
	// MaxNesting bounds nested arrays (an array of arrays is depth 2), so a
	// crafted file cannot recurse deeply; real files nest at most 2.
	MaxNesting = 8
	// MaxKeyLen bounds metadata keys and tensor names; GGUF keys are short
	// dotted names and GGML tensor names at most 64 bytes.
	MaxKeyLen = 1 << 16
	// MaxHeaderBytes bounds the metadata and tensor infos. The largest real
	// headers (256k-token vocabularies with merges) are a few tens of MiB.
	MaxHeaderBytes = 256 << 20
	// MaxKVs and MaxTensors bound the two counts; real files have about a
	// hundred metadata entries and a few thousand tensors.
	MaxKVs     = 1 << 20
	MaxTensors = 1 << 20
	// MaxArrayLen bounds one metadata array (vocabularies hold ~10^5–10^6).
	MaxArrayLen = 1 << 26
	// MaxStringLen bounds one metadata string (chat templates are KiBs).
	MaxStringLen = 64 << 20
	// MaxDataBytes bounds one tensor and the sum of all (64 TiB), so sizes
	// derived from dimensions cannot overflow the arithmetic that uses them.
	MaxDataBytes = 1 << 46

	// allocFactor and allocSlack make the memory budget of one parse: the
	// reader charges each allocation it makes (an over-estimate of what the
	// Go runtime allocates for it) and refuses the file once the total would
	// pass allocFactor bytes per byte of input (at most MaxHeaderBytes) plus
	// allocSlack. Real headers need about 3 bytes per byte.
	allocFactor = 16
	allocSlack  = 1 << 20
)

// Per-item estimates of what the runtime allocates, for the budget. They
// cover the item, its slot in a preallocated slice, its map entry and the
// interface box its value needs, rounded up.
const (
	costKV      = 40 + 48 + 16 // KV, map[string]int entry, boxed scalar
	costTensor  = 64 + 48 + 32 // TensorInfo, map entry, Dims backing array
	costString  = 16           // string header in a []string or a box
	costArray   = 24 + 24      // Array in a []Array and its box
	costOverlap = 8            // index slice in firstOverlap
)

// ErrLimit is the kind of every error that refuses a file for passing one of
// the reader's limits rather than for being malformed.
var ErrLimit = errors.New("exceeds a reader limit")

// LimitError names the limit a file passed. It unwraps to ErrLimit and is
// wrapped in a *FormatError that says where.
type LimitError struct {
	Limit string // e.g. "nesting depth", "kv_count", "header memory"
	Value int64  // what the file asked for (a lower bound where it overflows)
	Max   int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s %d exceeds %d", ErrLimit, e.Limit, e.Value, e.Max)
}

func (e *LimitError) Unwrap() error { return ErrLimit }

// ParseBudget is the allocation budget of a parse of n input bytes.
func ParseBudget(n int) int64 {
	return allocFactor*min(int64(n), MaxHeaderBytes) + allocSlack
}
