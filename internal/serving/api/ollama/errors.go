package ollama

import (
	"fmt"

	"github.com/skulk/skulk/internal/platform/fault"
)

// ErrorResponse is Ollama's error document: {"error":"message"}. The HTTP
// status carries the class. A streamed answer that fails after its first
// line ends with one line of this shape.
type ErrorResponse struct {
	Error string `json:"error"`
}

// ErrorFrom returns the error document for e.
func ErrorFrom(e *fault.Error) ErrorResponse {
	return ErrorResponse{Error: e.Message}
}

// ModelNotFound is the not-found error of a model, in Ollama's words
// ("model 'x' not found"), followed by detail (the cluster's own
// explanation, e.g. how to place it) when there is one.
func ModelNotFound(model, detail string) *fault.Error {
	msg := fmt.Sprintf("model '%s' not found", fault.Clip(model))
	if detail != "" {
		msg += ": " + detail
	}
	return &fault.Error{Class: fault.ClassNotFound, Param: "model", Message: msg}
}
