package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Error is an error response from the server.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Code is the server's stable error code, e.g. "not_found",
	// "precondition_failed", "unavailable"; "" when the response was not a
	// Parley error (a proxy's, say).
	Code string
	// Message is the server's human-readable explanation.
	Message string
	// Retryable is true when the same request, with the same idempotency
	// key, may simply be sent again.
	Retryable bool
	// RetryAfter is the server's Retry-After, 0 when absent.
	RetryAfter time.Duration
}

// Error implements error.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("parley: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	return fmt.Sprintf("parley: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsRetryableAttempt is IsRetryable for a caller that bounds each attempt
// with its own deadline inside a longer budget: an attempt that ran out of
// time may also be sent again (with the same idempotency key, since it may
// have taken effect).
func IsRetryableAttempt(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return true
	}
	return IsRetryable(err)
}

// IsRetryable reports whether the call that returned err may be sent again
// unchanged: the server said so, or the request failed in transport (the
// outcome is unknown, so writes should carry an idempotency key to be applied
// once). Cancellation and deadlines of the caller's context are not
// retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Retryable
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	_, ok := errors.AsType[*url.Error](err)
	return ok
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// decodeError turns a non-2xx response into an *Error.
func decodeError(resp *http.Response) *Error {
	e := &Error{Status: resp.StatusCode, RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"))}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var body struct {
		Error *struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e.Code, e.Message, e.Retryable = body.Error.Code, body.Error.Message, body.Error.Retryable
		return e
	}
	// Not a Parley error: a proxy or load balancer answered.
	e.Message = strings.TrimSpace(string(raw))
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		e.Retryable = true
	}
	return e
}

// maxRetryAfter caps Retry-After seconds so the duration cannot overflow.
const maxRetryAfter = 24 * 60 * 60

// parseRetryAfter reads a Retry-After of delay seconds or an HTTP date.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, maxRetryAfter)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
