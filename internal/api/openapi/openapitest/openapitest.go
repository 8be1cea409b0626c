// Package openapitest checks answers of Parley's HTTP API against its
// OpenAPI document (internal/api/openapi) with kin-openapi. It is for
// tests only: internal/api's tests check every answer of their helpers,
// and the client's tests wrap the server they talk to in Handler.
package openapitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/parley-chat/parley/internal/api/openapi"
)

// Spec returns the document, loaded once and checked to be a valid OpenAPI
// 3.1 document.
var Spec = sync.OnceValues(func() (*openapi3.T, error) {
	// JSON Lines (room exports) are checked line by line: the document
	// describes them as an array of the lines.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", decodeJSONLines)
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document())
	if err != nil {
		return nil, fmt.Errorf("openapi.json does not load: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("openapi.json is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.json is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
})

// Operation maps a route pattern of internal/api's table to the method and
// path of its operation in the document: "GET /api/v1/kv/{key...}" is
// ("GET", "/api/v1/kv/{key}"). ok is false for a bare path (a catch-all,
// which the document leaves out).
func Operation(pattern string) (method, path string, ok bool) {
	method, path, ok = strings.Cut(pattern, " ")
	if !ok {
		return "", "", false
	}
	return method, strings.ReplaceAll(path, "...}", "}"), true
}

// Check checks an answer to r against the document's operation for the
// route that served r (r.Pattern, which the server's ServeMux sets): a
// success status the operation lists (an error may fall to its default),
// no body where it describes none, and the content type, body and headers
// it describes. The catch-alls' answers must be JSON 404s or 405s of the
// Error schema. Requests no route matched (CORS preflights) and HEAD
// requests are not checked.
func Check(r *http.Request, status int, header http.Header, body []byte) error {
	doc, err := Spec()
	if err != nil {
		return err
	}
	if r.Pattern == "" || r.Method == http.MethodHead {
		return nil
	}
	method, path, ok := Operation(r.Pattern)
	if !ok {
		return checkErrorBody(doc, status, header, body)
	}
	item := doc.Paths.Value(path)
	var op *openapi3.Operation
	if item != nil {
		op = item.GetOperation(method)
	}
	if op == nil {
		return fmt.Errorf("route %s is not in openapi.json", r.Pattern)
	}
	resp := op.Responses.Status(status)
	if resp == nil && status < 400 {
		return fmt.Errorf("status %d is not among the operation's responses", status)
	}
	if resp == nil {
		resp = op.Responses.Default()
	}
	if resp != nil && resp.Value != nil && len(resp.Value.Content) == 0 && len(body) > 0 && (status < 300 || status >= 400) {
		return errors.New("a body where openapi.json describes none")
	}
	if header == nil {
		header = http.Header{}
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: r,
			Route:   &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: op},
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
}

// checkErrorBody checks an answer is a JSON 404 or 405 of the Error schema.
func checkErrorBody(doc *openapi3.T, status int, header http.Header, body []byte) error {
	if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
		return fmt.Errorf("a catch-all answered %d, not 404 or 405", status)
	}
	if ct := header.Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("a catch-all answered with Content-Type %q", ct)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("a catch-all's body is not JSON: %w", err)
	}
	schema := doc.Components.Schemas["Error"]
	if schema == nil || schema.Value == nil {
		return errors.New("openapi.json has no Error schema")
	}
	return schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// T is the part of testing.TB Handler needs.
type T interface {
	Helper()
	Errorf(format string, args ...any)
}

// Handler returns h with every answer checked against the document
// (Check) once h returns; a mismatch is reported with t.Errorf. An event
// stream's body and a hijacked connection's frames are not checked, only
// their status and headers.
func Handler(t T, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if err := rec.check(r); err != nil {
			t.Errorf("%v", err)
		}
	})
}

// Report formats a mismatch of an answer with the answer's start.
func Report(r *http.Request, status int, body []byte, err error) error {
	if len(body) > 2000 {
		body = append(body[:2000:2000], "..."...)
	}
	return fmt.Errorf("%s %s = %d: the answer does not match openapi.json: %w\nbody: %s", r.Method, r.URL, status, err, body)
}

// maxRecorded bounds the body a recorder keeps.
const maxRecorded = 8 << 20

// recorder passes an answer through and keeps its status, headers and body.
type recorder struct {
	http.ResponseWriter
	status   int
	header   http.Header // as sent, once the status is
	body     bytes.Buffer
	hijacked bool
}

// WriteHeader implements http.ResponseWriter.
func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status, rec.header = code, rec.ResponseWriter.Header().Clone()
	}
	rec.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	if rec.body.Len()+len(b) <= maxRecorded && !rec.streaming() {
		rec.body.Write(b)
	}
	return rec.ResponseWriter.Write(b)
}

// Flush lets event streams reach the client as they are written.
func (rec *recorder) Flush() {
	if rec.status == 0 {
		rec.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(rec.ResponseWriter).Flush()
}

// Hijack lets a WebSocket upgrade take the connection; its frames are not
// checked.
func (rec *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	rec.hijacked = true
	return http.NewResponseController(rec.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// streaming reports whether the answer is an event stream, whose body is
// not kept.
func (rec *recorder) streaming() bool {
	return strings.HasPrefix(rec.header.Get("Content-Type"), "text/event-stream")
}

// check checks the answer recorded.
func (rec *recorder) check(r *http.Request) error {
	status, header := rec.status, rec.header
	if status == 0 {
		status, header = http.StatusOK, rec.ResponseWriter.Header()
	}
	var body []byte
	if !rec.hijacked && !rec.streaming() {
		if rec.body.Len() >= maxRecorded {
			return nil // too large to check
		}
		body = rec.body.Bytes()
	}
	if err := Check(r, status, header, body); err != nil {
		return Report(r, status, body, err)
	}
	return nil
}

// decodeJSONLines decodes a JSON Lines body into the array of its lines.
func decodeJSONLines(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	lines := []any{}
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("line %d is not JSON: %w", len(lines)+1, err)
		}
		lines = append(lines, v)
	}
	return lines, sc.Err()
}
