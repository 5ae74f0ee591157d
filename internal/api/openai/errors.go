package openai

import "github.com/skulk/skulk/internal/infer"

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
func ErrorType(c infer.Class) (typ, code string) {
	switch c {
	case infer.ClassInvalid:
		return "invalid_request_error", ""
	case infer.ClassAuth:
		return "authentication_error", "invalid_api_key"
	case infer.ClassForbidden:
		return "permission_error", "forbidden"
	case infer.ClassNotFound:
		return "not_found_error", "not_found"
	case infer.ClassTooLarge:
		return "invalid_request_error", "request_too_large"
	case infer.ClassTimeout:
		return "invalid_request_error", "request_timeout"
	case infer.ClassConflict:
		return "conflict_error", "conflict"
	case infer.ClassUnavailable:
		return "service_unavailable_error", "unavailable"
	case infer.ClassCancelled:
		return "cancelled_error", "cancelled"
	case infer.ClassNoStorage:
		return "server_error", "insufficient_storage"
	}
	return "server_error", "internal_error"
}

// ErrorFrom returns the error document for e. A not-found error about the
// model field carries OpenAI's code "model_not_found".
func ErrorFrom(e *infer.Error) ErrorResponse {
	typ, code := ErrorType(e.Class)
	if e.Class == infer.ClassNotFound && e.Param == "model" {
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
