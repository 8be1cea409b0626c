package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// statusOf is the one table from error codes to HTTP statuses. Codes missing
// from it are internal errors (500).
var statusOf = map[errs.Code]int{
	errs.Invalid:              http.StatusBadRequest,
	errs.TooLarge:             http.StatusRequestEntityTooLarge,
	errs.Unauthorized:         http.StatusUnauthorized,
	errs.Forbidden:            http.StatusForbidden,
	errs.NotFound:             http.StatusNotFound,
	errs.Conflict:             http.StatusConflict,
	errs.PreconditionFailed:   http.StatusPreconditionFailed,
	errs.RateLimited:          http.StatusTooManyRequests,
	errs.Unavailable:          http.StatusServiceUnavailable,
	errs.Timeout:              http.StatusServiceUnavailable,
	errs.InsufficientStorage:  http.StatusInsufficientStorage,
	errs.UpgradeInProgress:    http.StatusServiceUnavailable,
	errs.IdempotencyKeyReused: http.StatusUnprocessableEntity,
	// Events after the seq asked for were removed by retention: the caller
	// must reload the latest page instead of resuming.
	chat.CodeHistoryCompacted: http.StatusGone,
}

// retryAfter lists the codes answered with a Retry-After: the wait the
// error names (limits.go), else 1 s.
var retryAfter = map[errs.Code]bool{
	errs.Unavailable: true,
	errs.Timeout:     true,
	errs.RateLimited: true,
	// Until every node runs the build that introduced the request.
	errs.UpgradeInProgress: true,
}

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorJSON `json:"error"`
}

type errorJSON struct {
	Code      errs.Code `json:"code"`
	Message   string    `json:"message"`
	Retryable bool      `json:"retryable"`
}

// loggedPath is r's path as logs may show it: a secret in it (an incoming
// webhook's URL) is replaced by "{secret}".
func loggedPath(r *http.Request) string {
	if secret := r.PathValue("secret"); secret != "" {
		return strings.ReplaceAll(r.URL.Path, secret, "{secret}")
	}
	return r.URL.Path
}

// writeError sends err as a JSON error. An *errs.Error with a known code is
// shown as is; anything else is logged and reported as a generic internal
// error, so details never reach users. A bare context deadline is a timeout.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *errs.Error
	if !errors.As(err, &e) && errors.Is(err, context.DeadlineExceeded) {
		e = errs.Wrap(errs.Timeout, err, "the request timed out; retry with the same idempotency key")
	}
	status, known := 0, false
	if e != nil {
		status, known = statusOf[e.Code]
	}
	if !known {
		if r.Context().Err() == nil {
			s.log.Error("internal error", "method", r.Method, "route", r.Pattern, "path", loggedPath(r), "err", err)
		} else {
			s.log.Debug("request abandoned", "method", r.Method, "route", r.Pattern, "err", err)
		}
		e = errs.New(errs.Internal, "internal error")
		status = http.StatusInternalServerError
	}
	if retryAfter[e.Code] {
		w.Header().Set("Retry-After", retryAfterOf(err))
	}
	if e.Code == errs.Unauthorized {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeJSON(w, status, errorBody{Error: errorJSON{Code: e.Code, Message: e.Message, Retryable: e.Retryable}})
}

// writeJSON sends v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	// An encoding error here means the client went away; there is no one to
	// tell.
	_ = json.NewEncoder(w).Encode(v)
}
