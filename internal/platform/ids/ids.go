package ids

import (
	"errors"
	"fmt"
	"strconv"
)

// MaxLen bounds every identity in bytes. The seed bounds retained identifiers
// at 256 UTF-8 bytes (CTRL-17); ours are ASCII, so bytes and characters agree.
const MaxLen = 256

// ErrInvalid is matched (errors.Is) by every *InvalidError.
var ErrInvalid = errors.New("ids: invalid identity")

// InvalidError reports an identity that fails validation.
type InvalidError struct {
	Type   string // "NodeID", "ModelID", ...
	Value  string // the offending value, quoted and truncated for logs
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("ids: invalid %s %s: %s", e.Type, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// NodeID names a cluster member.
type NodeID string

// InstanceID names a placed model instance. It equals the CommandID of the
// command that created it (seed CTRL-06), so an acknowledgement and the
// runtime instance correlate exactly.
type InstanceID string

// CommandID names one command sent to the master.
type CommandID string

// RunnerID names one runner process incarnation for an (instance, rank).
type RunnerID string

// TaskID names one unit of work (a text generation) dispatched to an instance.
type TaskID string

// ModelID names a model card, for example "meta-llama/Llama-3.2-1B-Instruct"
// or "qwen2.5:0.5b". It may contain '/', '@' and '+' besides the common
// charset, but no empty path segment and no "." or ".." segment.
type ModelID string

// Index is the position of an event in the master's log. The first event
// has Index 1; Index 0 means "nothing applied yet".
type Index uint64

// Term counts master elections. Every election increments it, and followers
// reject events of a lower term, which fences a deposed master.
type Term uint64

// Instance returns the identity of the instance this command creates.
func (c CommandID) Instance() InstanceID { return InstanceID(c) }

// Validate returns an *InvalidError unless id is well formed.
func (id NodeID) Validate() error { return check("NodeID", string(id), false) }

// Validate returns an *InvalidError unless id is well formed.
func (id InstanceID) Validate() error { return check("InstanceID", string(id), false) }

// Validate returns an *InvalidError unless id is well formed.
func (id CommandID) Validate() error { return check("CommandID", string(id), false) }

// Validate returns an *InvalidError unless id is well formed.
func (id RunnerID) Validate() error { return check("RunnerID", string(id), false) }

// Validate returns an *InvalidError unless id is well formed.
func (id TaskID) Validate() error { return check("TaskID", string(id), false) }

// Validate returns an *InvalidError unless id is well formed.
func (id ModelID) Validate() error { return check("ModelID", string(id), true) }

// ParseNodeID returns s as a NodeID, or an *InvalidError.
func ParseNodeID(s string) (NodeID, error) { return NodeID(s), NodeID(s).Validate() }

// ParseInstanceID returns s as an InstanceID, or an *InvalidError.
func ParseInstanceID(s string) (InstanceID, error) { return InstanceID(s), InstanceID(s).Validate() }

// ParseCommandID returns s as a CommandID, or an *InvalidError.
func ParseCommandID(s string) (CommandID, error) { return CommandID(s), CommandID(s).Validate() }

// ParseRunnerID returns s as a RunnerID, or an *InvalidError.
func ParseRunnerID(s string) (RunnerID, error) { return RunnerID(s), RunnerID(s).Validate() }

// ParseTaskID returns s as a TaskID, or an *InvalidError.
func ParseTaskID(s string) (TaskID, error) { return TaskID(s), TaskID(s).Validate() }

// ParseModelID returns s as a ModelID, or an *InvalidError.
func ParseModelID(s string) (ModelID, error) { return ModelID(s), ModelID(s).Validate() }

// check enforces the shared rules. The common charset is [A-Za-z0-9._:-];
// model ids add '/', '@' and '+' because hub names and tags use them. The
// first byte must be alphanumeric so an id never reads as a flag, a hidden
// file or an absolute path.
func check(typ, s string, model bool) error {
	bad := func(reason string) error {
		v := s
		if len(v) > 64 {
			v = v[:64] + "..."
		}
		return &InvalidError{Type: typ, Value: strconv.Quote(v), Reason: reason}
	}
	switch {
	case s == "":
		return bad("empty")
	case len(s) > MaxLen:
		return bad(fmt.Sprintf("%d bytes, limit %d", len(s), MaxLen))
	case !alnum(s[0]):
		return bad("must start with a letter or digit")
	}
	segStart := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case alnum(c) || c == '.' || c == '_' || c == ':' || c == '-':
		case model && (c == '@' || c == '+'):
		case model && c == '/':
			if err := segment(s[segStart:i]); err != "" {
				return bad(err)
			}
			segStart = i + 1
		default:
			return bad(fmt.Sprintf("byte %q at offset %d is outside the allowed charset", c, i))
		}
	}
	if model {
		if err := segment(s[segStart:]); err != "" {
			return bad(err)
		}
	}
	return nil
}

// segment rejects path segments that would escape or collapse in a file path.
func segment(seg string) string {
	switch seg {
	case "":
		return "empty path segment"
	case ".", "..":
		return fmt.Sprintf("path segment %q", seg)
	}
	return ""
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
