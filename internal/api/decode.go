package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/wire"
)

// smallBody is the limit of JSON bodies made of names, passwords and
// numbers: account, room, queue and ack requests.
const smallBody = 8 << 10

// bodyLimits are the JSON body limits of the routes whose bodies carry user
// content. A JSON string may spend six bytes (\u00XX) on one byte of
// content, so each is six times the content limit plus room for the rest.
type bodyLimits struct {
	post contentLimit // POST /api/v1/rooms/{room}/messages
	send contentLimit // POST /api/v1/queues/{queue}/messages
	link contentLimit // POST /api/v1/links
}

// contentLimit is the JSON body limit of a route whose body carries user
// content, with the content limit it derives from. The body limit is only
// a guard against reading more than any valid request needs; the content
// limit, which the domain enforces, is the one users are told about.
type contentLimit struct {
	body    int64  // the JSON body's limit in bytes
	field   string // the JSON field carrying the content
	content int    // the content's limit in bytes
}

func newBodyLimits(maxText, maxQueueBody, maxURL int) bodyLimits {
	if maxText <= 0 {
		maxText = chat.DefaultMaxText
	}
	if maxQueueBody <= 0 {
		maxQueueBody = queue.DefaultMaxBody
	}
	if maxURL <= 0 {
		maxURL = link.DefaultMaxURL
	}
	return bodyLimits{
		// Whisper recipients: up to chat.DefaultMaxMembers quoted names.
		post: contentLimit{body: 6*int64(maxText) + 64<<10, field: "text", content: maxText},
		send: contentLimit{body: 6*int64(maxQueueBody) + smallBody, field: "body", content: maxQueueBody},
		link: contentLimit{body: 6*int64(maxURL) + smallBody, field: "url", content: maxURL},
	}
}

// decodeContent is decodeWrite for a route whose body carries user
// content. A body past l's JSON limit is refused (errs.TooLarge) naming the
// content's limit, as the domain's refusal of long content does, so that
// a client is never told of two limits for one field.
func (s *Server) decodeContent(w http.ResponseWriter, r *http.Request, l contentLimit, body writeBody) (string, error) {
	idem, err := s.decodeWrite(w, r, l.body, body, false)
	if errs.Is(err, errs.TooLarge) {
		return "", errs.New(errs.TooLarge, "request too large; the %s limit is %d bytes", l.field, l.content)
	}
	return idem, err
}

// decodeJSON reads r's body, at most limit bytes (errs.TooLarge past it),
// into v: one JSON object with no unknown fields and nothing after it.
// An empty body is errs.Invalid unless optional, when v keeps its zero
// value. Errors name the offending field where there is one.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any, optional bool) error {
	b, err := s.readBody(w, r, limit)
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		if optional {
			return nil
		}
		return errs.New(errs.Invalid, "the body is empty; send a JSON object")
	}
	if trimmed[0] != '{' {
		return errs.New(errs.Invalid, "the body must be a JSON object")
	}
	return decodeObject(trimmed, v)
}

// decodeObject decodes b, a JSON object, into v: no unknown fields and
// nothing after it. Errors name the offending field where there is one
// and call b "the body".
func decodeObject(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errs.New(errs.Invalid, "the body has data after the JSON object")
	}
	return nil
}

// jsonError turns a decoding error into an errs.Invalid naming the field.
func jsonError(err error) error {
	if e, ok := errors.AsType[*errs.Error](err); ok { // a field's own decoder named the problem
		return e
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return errs.New(errs.Invalid, "%s must be %s, not %s", typeErr.Field, jsonType(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &typeErr):
		return errs.New(errs.Invalid, "the body must be a JSON object")
	case errors.As(err, &syntaxErr):
		return errs.New(errs.Invalid, "the body is not valid JSON (at byte %d)", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errs.New(errs.Invalid, "the body is truncated JSON")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return errs.New(errs.Invalid, "unknown field %s", name)
	}
	return errs.New(errs.Invalid, "the body is not valid JSON")
}

// jsonType names a Go kind as a JSON type for error messages.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "int", "int8", "int16", "int32", "int64":
		return "an integer"
	case "uint", "uint8", "uint16", "uint32", "uint64":
		return "a non-negative integer"
	case "float32", "float64":
		return "a number"
	}
	return "of another type"
}

// idempotencyKey returns the request's idempotency key: the Idempotency-Key
// header or the body's request_id; both given must agree.
// writeMeta is embedded in every JSON write body: the optional request_id
// that does what the Idempotency-Key header does.
type writeMeta struct {
	RequestID string `json:"request_id,omitempty"`
}

func (m *writeMeta) requestID() string { return m.RequestID }

// writeBody is a JSON write body carrying a request_id.
type writeBody interface{ requestID() string }

// decodeWrite decodes a JSON write body into body (see decodeJSON) and
// returns the request's idempotency key, from the header or request_id.
func (s *Server) decodeWrite(w http.ResponseWriter, r *http.Request, limit int64, body writeBody, optional bool) (string, error) {
	if err := s.decodeJSON(w, r, limit, body, optional); err != nil {
		return "", err
	}
	return idempotencyKey(r, body.requestID())
}

// withFingerprint gives a write request the fingerprint that tells its
// idempotency key apart from the same key sent with another request
// (wire.Fingerprint): the method, path and query, the precondition headers,
// and the body readBody reads. Every write gets one: its key may come in the
// body (request_id), whatever the Content-Type says.
func withFingerprint(r *http.Request) *http.Request {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return r
	}
	f := wire.NewFingerprint(r.Method, r.URL.RequestURI(), r.Header.Get("If-Match"), r.Header.Get("If-None-Match"))
	return r.WithContext(wire.WithFingerprint(r.Context(), f))
}

func idempotencyKey(r *http.Request, requestID string) (string, error) {
	h := r.Header.Get("Idempotency-Key")
	switch {
	case h == "":
		return requestID, nil
	case requestID == "" || requestID == h:
		return h, nil
	}
	return "", errs.New(errs.Invalid, "request_id and the Idempotency-Key header differ; send one of them")
}

// queryUint reads an optional non-negative integer parameter; present is
// false when it is absent.
func queryUint(r *http.Request, name string) (v uint64, present bool, err error) {
	q := r.URL.Query()
	if !q.Has(name) {
		return 0, false, nil
	}
	s := q.Get(name)
	v, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, true, errs.New(errs.Invalid, "%s must be a non-negative integer, got %q", name, clip(s))
	}
	return v, true, nil
}

// queryBool reads an optional true/false parameter (false when absent).
func queryBool(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, errs.New(errs.Invalid, "%s must be true or false, got %q", name, clip(v))
	}
}

// setStale reports a stale read's staleness.
func setStale(w http.ResponseWriter, stale bool, staleMs int64) {
	if stale {
		w.Header().Set(headerStaleMs, strconv.FormatInt(max(staleMs, 0), 10))
	}
}

// clip shortens user input quoted in error messages.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
