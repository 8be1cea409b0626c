package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/account"
)

func TestAPI_Register(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	var first userResponse
	mustJSON(t, e.do(t, http.MethodPost, "/api/v1/users", `{"username":"Alice","password":"password-Alice"}`), http.StatusCreated, &first)
	if first.Username != "Alice" || !first.Admin || first.CreatedAt == 0 {
		t.Fatalf("first user %+v, want admin Alice", first)
	}
	var second userResponse
	mustJSON(t, e.do(t, http.MethodPost, "/api/v1/users", `{"username":"bob","password":"password-bob","request_id":"r1"}`), http.StatusCreated, &second)
	if second.Admin {
		t.Fatal("the second user is admin")
	}
	t.Run("retry with the same request id", func(t *testing.T) {
		w := e.do(t, http.MethodPost, "/api/v1/users", `{"username":"bob","password":"password-bob"}`, "Idempotency-Key", "r1")
		mustJSON(t, w, http.StatusCreated, nil)
	})
	before := e.stored()
	cases := []struct {
		name, body string
		headers    []string
		status     int
		code, want string
	}{
		{"name taken, other case", `{"username":"ALICE","password":"password-x"}`, nil, 409, "conflict", "taken"},
		{"bad username", `{"username":"a b","password":"password-x"}`, nil, 400, "invalid", "username"},
		{"empty username", `{"username":"","password":"password-x"}`, nil, 400, "invalid", "username"},
		{"long username", `{"username":"` + strings.Repeat("u", 33) + `","password":"password-x"}`, nil, 400, "invalid", "username"},
		{"short password", `{"username":"carol","password":"short"}`, nil, 400, "invalid", "password"},
		{"long password", `{"username":"carol","password":"` + strings.Repeat("p", 257) + `"}`, nil, 400, "invalid", "password"},
		{"unknown field", `{"username":"carol","password":"password-x","admin":true}`, nil, 400, "invalid", `"admin"`},
		{"wrong type", `{"username":7,"password":"password-x"}`, nil, 400, "invalid", "username"},
		{"not JSON", `username=carol`, nil, 400, "invalid", "JSON"},
		{"array", `[1]`, nil, 400, "invalid", "object"},
		{"trailing data", `{"username":"carol","password":"password-x"} {}`, nil, 400, "invalid", "after"},
		{"truncated", `{"username":"carol"`, nil, 400, "invalid", "JSON"},
		{"empty body", ``, nil, 400, "invalid", "empty"},
		{"request ids differ", `{"username":"carol","password":"password-x","request_id":"a"}`, []string{"Idempotency-Key", "b"}, 400, "invalid", "request_id"},
		{"too large", `{"username":"carol","password":"` + strings.Repeat("p", 9<<10) + `"}`, nil, 413, "too_large", "limit"},
		{"bad credentials", `{"username":"carol","password":"password-x"}`, []string{"Authorization", "Bearer junk"}, 401, "unauthorized", "token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mustError(t, e.do(t, http.MethodPost, "/api/v1/users", tc.body, tc.headers...), tc.status, tc.code, tc.want)
		})
	}
	if after := e.stored(); after != before {
		t.Fatalf("refused registrations changed state: applied %v, then %v", before, after)
	}
}

func TestAPI_RegisterClosed(t *testing.T) {
	e := newFullEnv(t, envOptions{registration: account.RegistrationClosed})
	admin := e.signUp(t, "root") // the first user may register, and is admin
	mustError(t, e.do(t, http.MethodPost, "/api/v1/users", `{"username":"bob","password":"password-bob"}`), 403, "forbidden", "closed")
	bob := `{"username":"bob","password":"password-bob"}`
	mustJSON(t, e.call(t, admin, http.MethodPost, "/api/v1/users", bob), http.StatusCreated, nil)
	tok := e.login(t, "bob")
	mustError(t, e.call(t, tok, http.MethodPost, "/api/v1/users", `{"username":"carl","password":"password-carl"}`), 403, "forbidden", "closed")
}

func TestAPI_Login(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	e.signUp(t, "alice")
	var s sessionResponse
	w := e.do(t, http.MethodPost, "/api/v1/sessions", `{"username":"ALICE","password":"password-alice"}`)
	mustJSON(t, w, http.StatusCreated, &s)
	if s.Username != "alice" || !strings.HasPrefix(s.Token, "alice.") || s.ExpiresAt <= 0 {
		t.Fatalf("session %+v", s)
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Fatal("a token response may be cached")
	}
	for _, body := range []string{
		`{"username":"alice","password":"wrong-password"}`,
		`{"username":"nobody","password":"password-alice"}`,
		`{"username":"bad name","password":"password-alice"}`,
	} {
		mustError(t, e.do(t, http.MethodPost, "/api/v1/sessions", body), 401, "unauthorized", "invalid")
	}
	mustError(t, e.do(t, http.MethodPost, "/api/v1/sessions", `{"user":"alice"}`), 400, "invalid", `"user"`)
}

func TestAPI_Logout(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	tok := e.signUp(t, "alice")
	other := e.login(t, "alice")
	if w := e.call(t, tok, http.MethodDelete, "/api/v1/sessions/current", ""); w.Code != http.StatusNoContent || w.Body.Len() != 0 {
		t.Fatalf("logout = %d %q", w.Code, w.Body)
	}
	mustError(t, e.call(t, tok, http.MethodGet, "/api/v1/rooms", ""), 401, "unauthorized", "")
	mustError(t, e.call(t, tok, http.MethodDelete, "/api/v1/sessions/current", ""), 401, "unauthorized", "")
	if w := e.call(t, other, http.MethodGet, "/api/v1/rooms", ""); w.Code != http.StatusOK {
		t.Fatalf("the other session stopped too: %d", w.Code)
	}
}

func TestAPI_LoginRateLimit(t *testing.T) {
	e := newFullEnv(t, envOptions{rateLimit: 3})
	e.do(t, http.MethodPost, "/api/v1/users", `{"username":"alice","password":"password-alice"}`) // 1
	login := `{"username":"alice","password":"password-alice"}`
	for i := 0; i < 2; i++ { // 2, 3
		mustJSON(t, e.do(t, http.MethodPost, "/api/v1/sessions", login), http.StatusCreated, nil)
	}
	w := e.do(t, http.MethodPost, "/api/v1/sessions", login)
	mustError(t, w, 429, "rate_limited", `limit "logins-per-address" reached`)
	if got := w.Header().Get("Retry-After"); got != "20" {
		t.Fatalf("Retry-After = %q, want 20 (one attempt every 20 s)", got)
	}
	mustError(t, e.do(t, http.MethodPost, "/api/v1/users", `{"username":"bob","password":"password-bob"}`), 429, "rate_limited", "")
	t.Run("per client address", func(t *testing.T) {
		r := newRequest(http.MethodPost, "/api/v1/sessions", login)
		r.RemoteAddr = "192.0.2.7:5555"
		if w := serve(t, e.h, r); w.Code != http.StatusCreated {
			t.Fatalf("another address = %d %s", w.Code, w.Body)
		}
	})
	t.Run("refills", func(t *testing.T) {
		e.Clock.Advance(20 * 1e9)
		mustJSON(t, e.do(t, http.MethodPost, "/api/v1/sessions", login), http.StatusCreated, nil)
	})
}
