package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/parley-chat/parley/internal/api/openapi"
	"github.com/parley-chat/parley/internal/api/openapi/openapitest"
)

func mustSpec(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := openapitest.Spec()
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
		method, path, ok := openapitest.Operation(r.Pattern)
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
			op = item.GetOperation(method)
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
			if !inTable[method+" "+path] {
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
	if !bytes.Equal(w.Body.Bytes(), openapi.Document()) {
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

// checkResponse checks the answer w to r against openapi.json
// (openapitest.Check). do and serve call it, so every API test checks every
// answer it gets.
func checkResponse(t testing.TB, r *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	if err := openapitest.Check(r, w.Code, w.Header(), w.Body.Bytes()); err != nil {
		t.Error(openapitest.Report(r, w.Code, w.Body.Bytes(), err))
	}
}

// The operator reports of a signed-in user match the document too (the
// other routes' answers are checked by the tests of each route).
func TestOpenAPI_OperatorReports(t *testing.T) {
	e := newMatrixEnv(t)
	token := e.signUp(t, "alice")
	for _, target := range []string{"/api/v1/cluster/lag", "/api/v1/cluster/stats"} {
		if w := e.call(t, token, http.MethodGet, target, ""); w.Code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", target, w.Code, w.Body)
		}
	}
}
