package tensorfetch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/skulk/skulk/internal/platform/ids"
)

// Error codes a serving member answers with.
const (
	CodeNotInstalled = "not_installed" // the member has no verified copy of the model
	CodeBadRequest   = "bad_request"   // malformed, oversized or out of the file's parts
	CodeInternal     = "internal"      // the member could not read its copy
)

// ErrNotInstalled matches a member's answer that it does not have the model.
var ErrNotInstalled = errors.New("tensorfetch: the member does not have the model installed")

// RemoteError is a serving member's refusal.
type RemoteError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RemoteError) Error() string { return "tensorfetch: " + e.Code + ": " + e.Message }

// Is makes errors.Is(err, ErrNotInstalled) true for a not_installed answer.
func (e *RemoteError) Is(target error) bool {
	return target == ErrNotInstalled && e.Code == CodeNotInstalled
}

// VerifyError says bytes a member sent do not match the installing node's
// sum: the part is not recorded and the partial copy is not used.
type VerifyError struct {
	Model  string
	Part   string // a tensor name, or "header"
	Source ids.NodeID
	Want   string
	Got    string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("tensorfetch: model %s: %s from node %s has sha256 %s, the installing node recorded %s; the copy is not used",
		e.Model, e.Part, e.Source, e.Got, e.Want)
}

// NoSourceError says no member could supply the model's tensors.
type NoSourceError struct {
	Model   string
	Reasons []string // one per member tried
}

func (e *NoSourceError) Error() string {
	if len(e.Reasons) == 0 {
		return fmt.Sprintf("tensorfetch: model %s: no other member to fetch its tensors from", e.Model)
	}
	return fmt.Sprintf("tensorfetch: model %s: no member supplied its tensors (%s)", e.Model, strings.Join(e.Reasons, "; "))
}
