package api

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestAPI_ContentLimitsNameOneLimit checks that content too long for the
// domain and a request too large to read name the same limit: the
// content's, never the JSON body limit derived from it (six bytes a byte,
// and room for the rest).
func TestAPI_ContentLimitsNameOneLimit(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	tok := e.signUp(t, "alice")
	mustJSON(t, e.call(t, tok, http.MethodPost, "/api/v1/rooms", `{"name":"r"}`), http.StatusCreated, nil)
	mustJSON(t, e.call(t, tok, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`), http.StatusCreated, nil)
	lim := newBodyLimits(0, 0, 0)
	for _, tc := range []struct {
		name, path, field, prefix string
		limit                     contentLimit
	}{
		{"queue send", "/api/v1/queues/jobs/messages", "body", "", lim.send},
		{"room post", "/api/v1/rooms/r/messages", "text", "", lim.post},
		{"link create", "/api/v1/links", "url", "https://x.y/", lim.link},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := strconv.Itoa(tc.limit.content)
			body := func(s string) string { return `{"` + tc.field + `":"` + tc.prefix + s + `"}` }
			for _, c := range []struct {
				what, body string
			}{
				{"content over its limit", body(strings.Repeat("a", tc.limit.content+1))},
				{"request over the JSON limit", body(strings.Repeat(`\u0061`, int(tc.limit.body)/6+1))},
			} {
				msg := mustErrorBody(t, e.call(t, tok, http.MethodPost, tc.path, c.body), http.StatusRequestEntityTooLarge, "too_large").Message
				if !strings.Contains(msg, "limit is "+content) || strings.Contains(msg, strconv.FormatInt(tc.limit.body, 10)) || !strings.Contains(msg, tc.field) {
					t.Errorf("%s: %q; want the %s limit %s, not the body limit %d", c.what, msg, tc.field, content, tc.limit.body)
				}
			}
		})
	}
}
