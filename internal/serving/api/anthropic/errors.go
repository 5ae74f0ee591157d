package anthropic

import (
	"github.com/skulk/skulk/internal/platform/fault"
)

// ErrorResponse is Anthropic's error document, both as a response body and
// as the payload of a stream's error event:
// {"type":"error","error":{"type":...,"message":...}}.
type ErrorResponse struct {
	Type  string      `json:"type"` // "error"
	Error ErrorObject `json:"error"`
}

// ErrorObject is the body of an [ErrorResponse].
type ErrorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// ErrorType returns Anthropic's error type for an answer of the given
// status. Statuses Anthropic does not use map to the nearest type: 409 and
// other client errors to invalid_request_error, 503 (no capacity, a model
// still loading) to overloaded_error, which clients retry, and 408 (a body
// that did not arrive in time) to timeout_error.
func ErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429, 503, 529:
		return "overloaded_error"
	case 408, 504:
		return "timeout_error"
	}
	if status >= 400 && status < 500 && status != 499 {
		return "invalid_request_error"
	}
	return "api_error"
}

// ErrorFrom returns the error document for e answered with status.
func ErrorFrom(status int, e *fault.Error) ErrorResponse {
	return ErrorResponse{Type: "error", Error: ErrorObject{Type: ErrorType(status), Message: e.Message}}
}
