// Package errs defines Parley's error codes. Domain and engine packages return
// *Error values with a stable Code; only the api package turns a Code into an
// HTTP status. Anything that is not an *Error is reported to users as internal,
// so details of unexpected failures never leak.
package errs

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error code, sent to clients as-is.
type Code string

// The codes every layer may use. The api package maps each to one HTTP status.
const (
	Invalid             Code = "invalid"              // malformed or out-of-range input (400)
	TooLarge            Code = "too_large"            // a size limit was exceeded (413)
	Unauthorized        Code = "unauthorized"         // missing, unknown or expired credentials (401)
	Forbidden           Code = "forbidden"            // authenticated but not allowed (403)
	NotFound            Code = "not_found"            // the named thing does not exist (404)
	Conflict            Code = "conflict"             // already exists, full, lapsed lease (409)
	PreconditionFailed  Code = "precondition_failed"  // If-Match or similar did not hold (412)
	RateLimited         Code = "rate_limited"         // too many requests from this client (429)
	Unavailable         Code = "unavailable"          // no leader or quorum reachable; retry later (503)
	InsufficientStorage Code = "insufficient_storage" // the disk is full; reads still work (507)
	Timeout             Code = "timeout"              // the outcome is unknown; retry with the same idempotency key (503)
	Internal            Code = "internal"             // anything unexpected (500)
	HistoryCompacted    Code = "history_compacted"    // a resume point older than the history kept (410)
	UpgradeInProgress   Code = "upgrade_in_progress"  // a node runs an older build that cannot apply this; retry after the upgrade (503)
	// IdempotencyKeyReused: an idempotency key already used for a different request (422).
	IdempotencyKeyReused Code = "idempotency_key_reused"
)

// Error is an error with a stable code and a message safe to show to users.
type Error struct {
	Code    Code
	Message string
	// Retryable is true only when the same request, with the same idempotency
	// key, may simply be sent again.
	Retryable bool
	// Err is the underlying cause, kept for logs; it is never shown to users.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error with the given code and a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Retryable: code == Unavailable || code == Timeout || code == UpgradeInProgress}
}

// Wrap returns an *Error with the given code and message that keeps err as its cause.
func Wrap(code Code, err error, format string, args ...any) *Error {
	e := New(code, format, args...)
	e.Err = err
	return e
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
// A nil error has no code and returns "".
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool { return CodeOf(err) == code }
