package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// jsonRoutes is every route with a JSON body, with the limit of that body.
var jsonRoutes = []struct {
	method, path string
	limit        int
	optional     bool // an empty body is allowed
}{
	{http.MethodPost, "/api/v1/users", smallBody, false},
	{http.MethodPost, "/api/v1/sessions", smallBody, false},
	{http.MethodPost, "/api/v1/rooms", smallBody, false},
	{http.MethodPost, "/api/v1/rooms/r/join", smallBody, true},
	{http.MethodPost, "/api/v1/rooms/r/leave", smallBody, true},
	{http.MethodPost, "/api/v1/rooms/r/read", smallBody, false},
	{http.MethodPost, "/api/v1/rooms/r/messages", 6*4096 + 64<<10, false},
	{http.MethodPost, "/api/v1/queues", smallBody, false},
	{http.MethodPost, "/api/v1/queues/q/messages", 6*64<<10 + smallBody, false},
	{http.MethodPost, "/api/v1/queues/q/receive", smallBody, true},
	{http.MethodPost, "/api/v1/queues/q/ack", smallBody, false},
	{http.MethodPost, "/api/v1/links", 6*2048 + smallBody, false},
}

func TestAPI_JSONBodies(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	tok := e.signUp(t, "alice")
	before := e.stored()
	for _, rt := range jsonRoutes {
		t.Run(rt.path, func(t *testing.T) {
			call := func(body string) *httptest.ResponseRecorder {
				return e.call(t, tok, rt.method, rt.path, body)
			}
			mustError(t, call(`{"bogus_field":1}`), 400, "invalid", `unknown field "bogus_field"`)
			mustError(t, call(`{`), 400, "invalid", "JSON")
			mustError(t, call(`"text"`), 400, "invalid", "JSON object")
			mustError(t, call(`{} []`), 400, "invalid", "after the JSON object")
			mustError(t, call(`{"request_id":7}`), 400, "invalid", "request_id")
			mustError(t, call(`{"request_id":"`+strings.Repeat("k", rt.limit)+`"}`), 413, "too_large", "limit")
			if !rt.optional {
				mustError(t, call(""), 400, "invalid", "empty")
			}
		})
	}
	t.Run("declared length over the limit", func(t *testing.T) {
		r := newRequest(http.MethodPost, "/api/v1/queues", `{"name":"q"}`)
		r.ContentLength = smallBody + 1
		r.Header.Set("Authorization", "Bearer "+tok)
		mustError(t, serve(t, e.h, r), 413, "too_large", "limit")
	})
	if after := e.stored(); after != before {
		t.Fatalf("refused requests changed state: %s, then %s", before, after)
	}
}

func TestAPI_JSONType(t *testing.T) {
	for kind, want := range map[string]string{
		"string": "a string", "bool": "true or false", "slice": "an array", "int64": "an integer",
		"uint64": "a non-negative integer", "struct": "an object", "float64": "a number", "chan": "of another type",
	} {
		if got := jsonType(kind); got != want {
			t.Errorf("jsonType(%s) = %q, want %q", kind, got, want)
		}
	}
}
