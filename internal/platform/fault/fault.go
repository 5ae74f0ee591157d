// Package fault is the typed-error vocabulary every layer shares: an error
// class that each wire format maps to its status code and error shape, a
// code that refines it, the offending field, and bounds on how much of a
// client's input a message repeats.
package fault

import (
	"errors"
	"fmt"
)

// Class is a kind of failure that every wire format maps to its own status
// code and error shape.
type Class string

// Error classes.
const (
	ClassInvalid     Class = "invalid_request"      // the request can never succeed as sent (400)
	ClassAuth        Class = "authentication"       // missing or wrong API key (401)
	ClassForbidden   Class = "permission"           // the key or address may not use this route (403)
	ClassNotFound    Class = "not_found"            // unknown model, instance, route (404)
	ClassTooLarge    Class = "too_large"            // body or prompt over a limit (413)
	ClassTimeout     Class = "timeout"              // the request body did not arrive in time (408)
	ClassConflict    Class = "conflict"             // the resource is in use (409)
	ClassUnavailable Class = "unavailable"          // may succeed later: no capacity, loading (503)
	ClassNoStorage   Class = "insufficient_storage" // a disk of the node is full (507)
	ClassCancelled   Class = "cancelled"            // the client or an operator cancelled (499)
	ClassInternal    Class = "internal"             // a bug or a runner crash (500)
)

// Error is a classified error with a message meant for the client.
type Error struct {
	Class   Class  `json:"class"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"` // the offending request field, when known
	// Code refines the class for clients that branch on it (OpenAI's
	// error.code): template_limit, no_quorum, commit_unknown...; empty for
	// most errors.
	Code string `json:"code,omitempty"`
}

// CodeTemplateLimit is the code of a request refused because the model's
// chat template would pass one of its render budgets on it.
const CodeTemplateLimit = "template_limit"

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error of class c.
func Errorf(c Class, format string, args ...any) *Error {
	return &Error{Class: c, Message: fmt.Sprintf(format, args...)}
}

// ParamErrorf returns an invalid-request *Error naming the offending field.
func ParamErrorf(param, format string, args ...any) *Error {
	return &Error{Class: ClassInvalid, Param: param, Message: fmt.Sprintf(format, args...)}
}

// ClassOf returns the class of err: the class of an *Error in its chain, or
// ClassInternal.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ClassInternal
}

// ClassOfStatus is the class of a status that an error chose itself (the
// placement planner's refusals): the class with that status, else invalid
// for other 4xx and internal for the rest.
func ClassOfStatus(status int) Class {
	for _, c := range []Class{ClassInvalid, ClassAuth, ClassForbidden, ClassNotFound, ClassTooLarge, ClassTimeout,
		ClassConflict, ClassUnavailable, ClassCancelled, ClassNoStorage} {
		if c.HTTPStatus() == status {
			return c
		}
	}
	if status >= 400 && status < 500 {
		return ClassInvalid
	}
	return ClassInternal
}

// HTTPStatus is the status code a class maps to.
func (c Class) HTTPStatus() int {
	switch c {
	case ClassInvalid:
		return 400
	case ClassAuth:
		return 401
	case ClassForbidden:
		return 403
	case ClassNotFound:
		return 404
	case ClassTimeout:
		return 408
	case ClassConflict:
		return 409
	case ClassTooLarge:
		return 413
	case ClassCancelled:
		return 499
	case ClassUnavailable:
		return 503
	case ClassNoStorage:
		return 507
	}
	return 500
}
