package openapitest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Check refuses what the document does not describe.
func TestCheck(t *testing.T) {
	if _, err := Spec(); err != nil {
		t.Fatal(err)
	}
	req := func(pattern, method, target string) *http.Request {
		r := httptest.NewRequest(method, target, nil)
		r.Pattern = pattern
		return r
	}
	extend := req("POST /api/v1/queues/{queue}/extend", "POST", "/api/v1/queues/q/extend")
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name   string
		r      *http.Request
		status int
		header http.Header
		body   string
		ok     bool
	}{
		{"a matching answer", extend, 200, jsonHeader, `{"lease_expires_at":12}`, true},
		{"a field the document lacks", extend, 200, jsonHeader, `{"lease_expires_at":12,"extra":1}`, false},
		{"a required field missing", extend, 200, jsonHeader, `{}`, false},
		{"a field of another type", extend, 200, jsonHeader, `{"lease_expires_at":"soon"}`, false},
		{"a success status the operation lacks", extend, 201, jsonHeader, `{"lease_expires_at":12}`, false},
		{"another content type", extend, 200, http.Header{"Content-Type": {"text/plain"}}, `{"lease_expires_at":12}`, false},
		{"an error", extend, 409, jsonHeader, `{"error":{"code":"conflict","message":"lapsed","retryable":false}}`, true},
		{"an error of another shape", extend, 409, jsonHeader, `{"error":"lapsed"}`, false},
		{"an unknown error code", extend, 409, jsonHeader, `{"error":{"code":"oops","message":"lapsed","retryable":false}}`, false},
		{"a 401 without WWW-Authenticate", extend, 401, jsonHeader, `{"error":{"code":"unauthorized","message":"sign in","retryable":false}}`, false},
		{"a body where the document has none", req("DELETE /api/v1/queues/{queue}", "DELETE", "/api/v1/queues/q"), 204, nil, `{}`, false},
		{"a nested schema", req("GET /api/v1/rooms/{room}/messages", "GET", "/api/v1/rooms/r/messages"), 200, jsonHeader,
			`{"messages":[{"room":"r","seq":2,"ts":5,"kind":"edit","target":1,"current":{"room":"r","seq":1,"ts":4,"kind":"message","text":"hi","edited_at":5}}]}`, true},
		{"a nested schema's unknown field", req("GET /api/v1/rooms/{room}/messages", "GET", "/api/v1/rooms/r/messages"), 200, jsonHeader,
			`{"messages":[{"room":"r","seq":2,"ts":5,"kind":"edit","current":{"room":"r","seq":1,"ts":4,"kind":"message","txt":"hi"}}]}`, false},
		{"a composed schema's unknown field", req("GET /api/v1/rooms", "GET", "/api/v1/rooms"), 200, jsonHeader,
			`{"rooms":[{"name":"r","owner":"a","private":false,"max_members":0,"members":1,"created_at":1,"last_seq":0,"first_retained_seq":1,"member":true,"last_read":0,"online":0,"unread_mentions":0,"secret":1}]}`, false},
		{"a catch-all's error", req("/api/", "GET", "/api/nope"), 404, jsonHeader,
			`{"error":{"code":"not_found","message":"no such route","retryable":false}}`, true},
		{"a catch-all's other answer", req("/api/", "GET", "/api/nope"), 404, http.Header{"Content-Type": {"text/plain"}}, `404 page not found`, false},
		{"a route the document lacks", req("GET /api/v1/nope", "GET", "/api/v1/nope"), 200, jsonHeader, `{}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.r, tc.status, tc.header, []byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("Check = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// errs records what Handler reports.
type errs []string

func (*errs) Helper() {}
func (e *errs) Errorf(format string, args ...any) {
	*e = append(*e, format)
}

// Handler checks the answers passing through it.
func TestHandler(t *testing.T) {
	var got errs
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(r.URL.Query().Get("say")))
	})
	h := Handler(&got, mux)
	for _, tc := range []struct {
		say  string
		errs int
	}{{"ok", 0}, {"not+ok", 1}} {
		got = nil
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz?say="+tc.say, nil))
		if len(got) != tc.errs {
			t.Errorf("say %q: %d reports %q, want %d", tc.say, len(got), got, tc.errs)
		}
	}
}
