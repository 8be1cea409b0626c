package api

import (
	"net/http"
	"strings"
	"testing"
)

func TestServer_CORS(t *testing.T) {
	e := newEnv(t, Config{StreamOrigins: func() []string { return []string{"10.0.0.7:7070", "https://chat.example.com"} }})
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		headers []string
		status  int
		allow   string // Access-Control-Allow-Origin wanted, "" for none
	}{
		{"preflight from a member", "OPTIONS", "/api/v1/kv/a",
			[]string{"Origin", "http://10.0.0.7:7070", "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "authorization,content-type,idempotency-key"},
			http.StatusNoContent, "http://10.0.0.7:7070"},
		{"preflight from a configured origin", "OPTIONS", "/api/v1/rooms",
			[]string{"Origin", "https://chat.example.com", "Access-Control-Request-Method", "POST"},
			http.StatusNoContent, "https://chat.example.com"},
		{"preflight from a foreign origin", "OPTIONS", "/api/v1/kv/a",
			[]string{"Origin", "https://evil.example", "Access-Control-Request-Method", "PUT"},
			http.StatusForbidden, ""},
		{"preflight from a configured origin with another scheme", "OPTIONS", "/api/v1/kv/a",
			[]string{"Origin", "http://chat.example.com", "Access-Control-Request-Method", "PUT"},
			http.StatusForbidden, ""},
		{"a member's call is readable", "GET", "/api/v1/kv/missing",
			[]string{"Origin", "http://10.0.0.7:7070"}, http.StatusNotFound, "http://10.0.0.7:7070"},
		{"a foreign call is not", "GET", "/api/v1/kv/missing",
			[]string{"Origin", "https://evil.example"}, http.StatusNotFound, ""},
		{"no Origin, no CORS", "GET", "/api/v1/kv/missing", nil, http.StatusNotFound, ""},
		{"OPTIONS that is no preflight", "OPTIONS", "/api/v1/kv/a",
			[]string{"Origin", "http://10.0.0.7:7070"}, http.StatusMethodNotAllowed, "http://10.0.0.7:7070"},
		{"only /api/", "GET", "/healthz", []string{"Origin", "http://10.0.0.7:7070"}, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, tc.method, tc.path, "", tc.headers...)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d (%s)", w.Code, tc.status, w.Body)
			}
			h := w.Header()
			if got := h.Get("Access-Control-Allow-Origin"); got != tc.allow {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tc.allow)
			}
			if h.Get("Access-Control-Allow-Credentials") != "" {
				t.Error("credentials allowed: tokens travel in headers only")
			}
			if tc.status == http.StatusNoContent {
				for _, want := range []string{"Authorization", "Content-Type", "Idempotency-Key"} {
					if !strings.Contains(h.Get("Access-Control-Allow-Headers"), want) {
						t.Errorf("Access-Control-Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), want)
					}
				}
				if !strings.Contains(h.Get("Access-Control-Allow-Methods"), tc.headers[3]) {
					t.Errorf("Access-Control-Allow-Methods %q lacks %s", h.Get("Access-Control-Allow-Methods"), tc.headers[3])
				}
			}
			if len(tc.headers) > 0 && tc.path != "/healthz" && !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
				t.Errorf("Vary %q lacks Origin", h.Values("Vary"))
			}
		})
	}
}
