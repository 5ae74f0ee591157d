package event

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Bounds on decoded values. They keep a hostile or corrupt record from
// growing State without limit.
const (
	MaxRanks         = 256     // stages in one placement
	MaxExcludedNodes = 256     // excluded_nodes entries
	MaxLayers        = 1 << 16 // transformer blocks in one model
	MaxContextTokens = 1 << 24 // stamped context window
	MaxReasonBytes   = 1024    // reason and detail strings (operator-safe, never content)
	MaxBackendBytes  = 64
)

// Backend is an engine tag "<engine>-<compute>" such as "native-cpu" or
// "llama_server-cuda" (seed ENG-01).
type Backend string

// Validate reports whether b is a well-formed backend tag.
func (b Backend) Validate() error {
	if b == "" || len(b) > MaxBackendBytes {
		return fmt.Errorf("backend tag must be 1..%d bytes, got %d", MaxBackendBytes, len(b))
	}
	if c := b[0]; c < 'a' || c > 'z' {
		return fmt.Errorf("backend tag %q must start with a lowercase letter", truncate(string(b)))
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("backend tag %q: byte %q is outside [a-z0-9_-]", truncate(string(b)), c)
		}
	}
	return nil
}

// Shard is one pipeline stage of a placement: the rank is its position in
// the placement slice. Rank 0 holds the token embedding; the last rank holds
// the output norm and head.
type Shard struct {
	Node           ids.NodeID `json:"node"`
	LayerStart     uint32     `json:"layer_start"` // first layer, inclusive
	LayerEnd       uint32     `json:"layer_end"`   // last layer, exclusive
	HoldsEmbedding bool       `json:"holds_embedding"`
	HoldsHead      bool       `json:"holds_head"`
}

// validatePlacement checks that the shards cover [0, layers) contiguously,
// each on a distinct node, with embedding and head on the end ranks, and
// that no shard sits on an excluded node.
func validatePlacement(k Kind, shards []Shard, layers uint32, excluded []ids.NodeID) error {
	if err := validateNodeList(k, "excluded_nodes", excluded, MaxExcludedNodes); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return &InvalidError{Kind: k, Field: "placement", Err: fmt.Errorf(format, args...)}
	}
	if layers == 0 || layers > MaxLayers {
		return &InvalidError{Kind: k, Field: "layers", Err: fmt.Errorf("%d outside 1..%d", layers, MaxLayers)}
	}
	if len(shards) == 0 || len(shards) > MaxRanks {
		return bad("%d ranks outside 1..%d", len(shards), MaxRanks)
	}
	next := uint32(0)
	seen := make(map[ids.NodeID]bool, len(shards))
	for r, sh := range shards {
		if err := sh.Node.Validate(); err != nil {
			return &InvalidError{Kind: k, Field: fmt.Sprintf("placement[%d].node", r), Err: err}
		}
		if seen[sh.Node] {
			return bad("node %s holds more than one rank", sh.Node)
		}
		seen[sh.Node] = true
		if sh.LayerStart != next || sh.LayerEnd <= sh.LayerStart {
			return bad("rank %d covers [%d,%d), want a non-empty range starting at %d", r, sh.LayerStart, sh.LayerEnd, next)
		}
		next = sh.LayerEnd
		if sh.HoldsEmbedding != (r == 0) {
			return bad("rank %d holds_embedding=%t; only rank 0 holds the embedding", r, sh.HoldsEmbedding)
		}
		if sh.HoldsHead != (r == len(shards)-1) {
			return bad("rank %d holds_head=%t; only the last rank holds the head", r, sh.HoldsHead)
		}
	}
	if next != layers {
		return bad("ranks cover [0,%d), model has %d layers", next, layers)
	}
	for _, n := range excluded {
		if seen[n] {
			return bad("node %s is excluded but holds a rank", n)
		}
	}
	return nil
}

func validateNodeList(k Kind, field string, nodes []ids.NodeID, limit int) error {
	if len(nodes) > limit {
		return &InvalidError{Kind: k, Field: field, Err: fmt.Errorf("%d entries, limit %d", len(nodes), limit)}
	}
	seen := make(map[ids.NodeID]bool, len(nodes))
	for i, n := range nodes {
		if err := n.Validate(); err != nil {
			return &InvalidError{Kind: k, Field: fmt.Sprintf("%s[%d]", field, i), Err: err}
		}
		if seen[n] {
			return &InvalidError{Kind: k, Field: field, Err: fmt.Errorf("duplicate node %s", n)}
		}
		seen[n] = true
	}
	return nil
}

// checks returns the first non-nil error, each wrapped with its field name.
// Callers list fields in declaration order so the first failure is stable.
type check struct {
	field string
	err   error
}

func firstInvalid(k Kind, cs ...check) error {
	for _, c := range cs {
		if c.err != nil {
			var ie *InvalidError
			if errors.As(c.err, &ie) {
				return c.err
			}
			return &InvalidError{Kind: k, Field: c.field, Err: c.err}
		}
	}
	return nil
}

func reason(s string) error {
	if len(s) > MaxReasonBytes {
		return fmt.Errorf("%d bytes, limit %d", len(s), MaxReasonBytes)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	return nil
}

func required(s string) error {
	if s == "" {
		return errors.New("required")
	}
	return reason(s)
}

func unixMs(v int64) error {
	if v < 0 {
		return fmt.Errorf("negative time %d", v)
	}
	return nil
}

func positive(v, limit uint32) error {
	if v == 0 || v > limit {
		return fmt.Errorf("%d outside 1..%d", v, limit)
	}
	return nil
}

// enum validates a string enum against its known values.
func enum[T ~string](v T, known ...T) error {
	for _, k := range known {
		if v == k {
			return nil
		}
	}
	return fmt.Errorf("unknown value %q", truncate(string(v)))
}
