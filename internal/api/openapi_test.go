package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
)

// loadSpec loads openapi.json once and checks it is a valid OpenAPI 3.1
// document.
var loadSpec = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapiJSON)
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

func mustSpec(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// notInSpec are the routes of the table openapi.json leaves out, and why.
// Their answers are still checked: each is the Error schema.
var notInSpec = map[string]string{
	"/api/":      "the catch-all of unknown /api/ routes: a JSON 404, or a JSON 405 with Allow when the path exists under another method (noroute.go)",
	"/api/v1/kv": "the same catch-all for /api/v1/kv under methods other than GET, so that they are not redirected to /api/v1/kv/",
}

// specRoute maps a route pattern of the table to the method and path of
// its operation in openapi.json: "GET /api/v1/kv/{key...}" is ("get",
// "/api/v1/kv/{key}"). ok is false for a bare path (a catch-all).
func specRoute(pattern string) (method, path string, ok bool) {
	method, path, ok = strings.Cut(pattern, " ")
	if !ok {
		return "", "", false
	}
	return strings.ToLower(method), strings.ReplaceAll(path, "...}", "}"), true
}

// pathParams returns the names of the {wildcards} of a path.
func pathParams(path string) []string {
	var out []string
	for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// opPathParams returns the names of the path parameters an operation
// declares, its path item's included.
func opPathParams(item *openapi3.PathItem, op *openapi3.Operation) []string {
	var out []string
	for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
		if p.Value != nil && p.Value.In == openapi3.ParameterInPath {
			out = append(out, p.Value.Name)
		}
	}
	slices.Sort(out)
	return out
}

// tokenOptional reports whether an operation's security lets a request
// without a token through: no requirement, or an empty one among them.
func tokenOptional(op *openapi3.Operation) bool {
	if op.Security == nil || len(*op.Security) == 0 {
		return true
	}
	return slices.ContainsFunc(*op.Security, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 })
}

// openapi.json describes exactly the routes of the table, each with the
// access the table gives it, its path parameters and a security that says
// whether a token is needed.
func TestOpenAPI_MatchesRouteTable(t *testing.T) {
	doc := mustSpec(t)
	e := newMatrixEnv(t)
	inTable := map[string]bool{}
	for _, r := range e.srv.Routes() {
		method, path, ok := specRoute(r.Pattern)
		if !ok {
			if notInSpec[r.Pattern] == "" {
				t.Errorf("the catch-all %q is neither in openapi.json nor in notInSpec with a reason", r.Pattern)
			}
			inTable[r.Pattern] = true
			continue
		}
		inTable[method+" "+path] = true
		item := doc.Paths.Value(path)
		var op *openapi3.Operation
		if item != nil {
			op = item.GetOperation(strings.ToUpper(method))
		}
		if op == nil {
			t.Errorf("route %s is missing from openapi.json (%s %s)", r.Pattern, method, path)
			continue
		}
		if got := op.Extensions["x-parley-access"]; got != r.Access.String() {
			t.Errorf("%s: x-parley-access is %v, the route table says %q", r.Pattern, got, r.Access)
		}
		if needed := r.Access == SignedIn || r.Access == AdminOnly; needed == tokenOptional(op) {
			t.Errorf("%s (%v): the security of openapi.json says a token is optional: %v", r.Pattern, r.Access, tokenOptional(op))
		}
		if got, want := opPathParams(item, op), pathParams(r.Pattern); !slices.Equal(got, want) {
			t.Errorf("%s: openapi.json declares the path parameters %q, the pattern has %q", r.Pattern, got, want)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !inTable[strings.ToLower(method)+" "+path] {
				t.Errorf("openapi.json has %s %s, which no route of the table serves", method, path)
			}
		}
	}
	for pattern := range notInSpec {
		if !inTable[pattern] {
			t.Errorf("notInSpec lists %q, which the route table does not have", pattern)
		}
	}
}

// The document is served as it is in the repository, as JSON, to anyone.
func TestOpenAPI_Served(t *testing.T) {
	e := newEnv(t, Config{})
	w := e.do(t, http.MethodGet, "/api/v1/openapi.json", "")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
	if !bytes.Equal(w.Body.Bytes(), openapiJSON) {
		t.Fatal("the document served differs from openapi.json")
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.1.") || len(doc.Paths) == 0 {
		t.Fatalf("served document: openapi %q, %d paths, %v", doc.OpenAPI, len(doc.Paths), err)
	}
}

// The response check itself refuses what the spec does not describe.
func TestOpenAPI_ValidateResponse(t *testing.T) {
	mustSpec(t)
	req := func(pattern, method, target string) *http.Request {
		r := httptest.NewRequest(method, target, nil)
		r.Pattern = pattern
		return r
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name   string
		r      *http.Request
		status int
		header http.Header
		body   string
		ok     bool
	}{
		{"a matching answer", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			200, jsonHeader, `{"lease_expires_at":12}`, true},
		{"a field the spec lacks", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			200, jsonHeader, `{"lease_expires_at":12,"extra":1}`, false},
		{"a required field missing", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			200, jsonHeader, `{}`, false},
		{"a success status the spec lacks", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			201, jsonHeader, `{"lease_expires_at":12}`, false},
		{"another content type", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			200, http.Header{"Content-Type": {"text/plain"}}, `{"lease_expires_at":12}`, false},
		{"an error", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			409, jsonHeader, `{"error":{"code":"conflict","message":"lapsed","retryable":false}}`, true},
		{"an error of another shape", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			409, jsonHeader, `{"error":"lapsed"}`, false},
		{"an unknown error code", req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend"),
			409, jsonHeader, `{"error":{"code":"oops","message":"lapsed","retryable":false}}`, false},
		{"a body where the spec has none", req("DELETE /api/v1/queues/{queue}", "DELETE", "/api/v1/queues/q"),
			204, nil, `{}`, false},
		{"a catch-all's error", req("/api/", "GET", "/api/nope"),
			404, jsonHeader, `{"error":{"code":"not_found","message":"no such route","retryable":false}}`, true},
		{"a catch-all's other answer", req("/api/", "GET", "/api/nope"),
			404, http.Header{"Content-Type": {"text/plain"}}, `404 page not found`, false},
		{"a route the spec lacks", req("GET /api/v1/nope", "GET", "/api/v1/nope"),
			200, jsonHeader, `{}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validateResponse(tc.r, tc.status, tc.header, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("validateResponse = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// checkResponse checks the answer w to r against openapi.json (see
// validateResponse). do and serve call it, so every API test checks every
// answer it gets.
func checkResponse(t testing.TB, r *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	if err := validateResponse(r, w.Code, w.Header(), w.Body.Bytes()); err != nil {
		body := w.Body.String()
		if len(body) > 2000 {
			body = body[:2000] + "..."
		}
		t.Errorf("%s %s = %d: the answer does not match openapi.json: %v\nbody: %s", r.Method, r.URL, w.Code, err, body)
	}
}

// validateResponse checks an answer against the operation of openapi.json
// of the route that served r (r.Pattern, set by the mux): a success status
// the operation lists (an error may fall to its default), no body where it
// describes none, and the content type, body and headers it describes.
// Answers of the catch-alls must be JSON errors. Requests no route
// matched (CORS preflights) and HEAD requests are not checked.
func validateResponse(r *http.Request, status int, header http.Header, body []byte) error {
	doc, err := loadSpec()
	if err != nil {
		return err
	}
	if r.Pattern == "" || r.Method == http.MethodHead {
		return nil
	}
	method, path, ok := specRoute(r.Pattern)
	if !ok {
		return validateErrorBody(doc, status, header, body)
	}
	item := doc.Paths.Value(path)
	var op *openapi3.Operation
	if item != nil {
		op = item.GetOperation(strings.ToUpper(method))
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
		return fmt.Errorf("a body where openapi.json describes none")
	}
	if header == nil {
		header = http.Header{}
	}
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: r,
			Route:   &routers.Route{Spec: doc, Path: path, PathItem: item, Method: strings.ToUpper(method), Operation: op},
		},
		Status:  status,
		Header:  header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	})
}

// validateErrorBody checks an answer is a JSON 404 or 405 of the Error
// schema.
func validateErrorBody(doc *openapi3.T, status int, header http.Header, body []byte) error {
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
