package openai

import (
	"github.com/skulk/skulk/internal/platform/fault"
)

// ErrorResponse is OpenAI's error document:
// {"error":{"message","type","param","code"}}.
type ErrorResponse struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject is the body of an [ErrorResponse]. Param and Code are null
// when unknown.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// ErrorType returns OpenAI's error type and code for a class.
func ErrorType(c fault.Class) (typ, code string) {
	switch c {
	case fault.ClassInvalid:
		return "invalid_request_error", ""
	case fault.ClassAuth:
		return "authentication_error", "invalid_api_key"
	case fault.ClassForbidden:
		return "permission_error", "forbidden"
	case fault.ClassNotFound:
		return "not_found_error", "not_found"
	case fault.ClassTooLarge:
		return "invalid_request_error", "request_too_large"
	case fault.ClassTimeout:
		return "invalid_request_error", "request_timeout"
	case fault.ClassConflict:
		return "conflict_error", "conflict"
	case fault.ClassUnavailable:
		return "service_unavailable_error", "unavailable"
	case fault.ClassCancelled:
		return "cancelled_error", "cancelled"
	case fault.ClassNoStorage:
		return "server_error", "insufficient_storage"
	}
	return "server_error", "internal_error"
}

// ErrorFrom returns the error document for e. A not-found error about the
// model field carries OpenAI's code "model_not_found".
func ErrorFrom(e *fault.Error) ErrorResponse {
	typ, code := ErrorType(e.Class)
	if e.Class == fault.ClassNotFound && e.Param == "model" {
		code = "model_not_found"
	}
	if e.Code != "" {
		code = e.Code
	}
	obj := ErrorObject{Message: e.Message, Type: typ}
	if e.Param != "" {
		obj.Param = &e.Param
	}
	if code != "" {
		obj.Code = &code
	}
	return ErrorResponse{Error: obj}
}
