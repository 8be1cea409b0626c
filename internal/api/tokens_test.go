package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// mustAPIToken creates a token as the holder of session and returns it.
func mustAPIToken(t *testing.T, e *fullEnv, session, body string) apiTokenJSON {
	t.Helper()
	var tok apiTokenJSON
	mustJSON(t, e.call(t, session, http.MethodPost, "/api/v1/tokens", body), http.StatusCreated, &tok)
	return tok
}

func TestAPITokens_Lifecycle(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	admin := e.signUp(t, "alice")
	bob := e.signUp(t, "bob")
	if w := e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"general"}`); w.Code != http.StatusCreated {
		t.Fatalf("create room = %d %s", w.Code, w.Body)
	}

	w := e.call(t, bob, http.MethodPost, "/api/v1/tokens", `{"name":"reader","scopes":["read"],"expires_in":3600}`)
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control = %q, want no-store for a secret", cc)
	}
	var read apiTokenJSON
	mustJSON(t, w, http.StatusCreated, &read)
	if !strings.HasPrefix(read.Token, "pat_bob.") || read.ID == "" || read.Username != "bob" || read.LastUsedAt != nil ||
		read.ExpiresAt-read.CreatedAt != time.Hour.Milliseconds() {
		t.Fatalf("created %+v", read)
	}
	write := mustAPIToken(t, e, bob, `{"name":"poster","scopes":["write:room/general"]}`)
	e.Clock.Advance(time.Second) // uses are then after the epoch, where the clock starts

	t.Run("a read token reads but cannot post", func(t *testing.T) {
		if w := e.call(t, read.Token, http.MethodGet, "/api/v1/rooms/general/messages", ""); w.Code != http.StatusOK {
			t.Fatalf("history with a read token = %d %s", w.Code, w.Body)
		}
		before := e.stored()
		w := e.call(t, read.Token, http.MethodPost, "/api/v1/rooms/general/messages", `{"text":"hi"}`)
		mustError(t, w, http.StatusForbidden, "forbidden", "scopes (read)")
		if !strings.Contains(w.Body.String(), "write scope") {
			t.Fatalf("the refusal does not say what is needed: %s", w.Body)
		}
		if after := e.stored(); after != before {
			t.Fatalf("a refused post changed state: %s, then %s", before, after)
		}
	})
	t.Run("a narrowed token posts to its room only", func(t *testing.T) {
		if w := e.call(t, write.Token, http.MethodPost, "/api/v1/rooms/General/messages", `{"text":"from a bot"}`); w.Code != http.StatusCreated {
			t.Fatalf("post with write:room/general = %d %s", w.Code, w.Body)
		}
		mustError(t, e.call(t, write.Token, http.MethodPost, "/api/v1/rooms/other/messages", `{"text":"x"}`), http.StatusForbidden, "forbidden", "write:room/other")
		mustError(t, e.call(t, write.Token, http.MethodGet, "/api/v1/rooms", ""), http.StatusForbidden, "forbidden", "read scope")
	})
	t.Run("tokens cannot manage tokens", func(t *testing.T) {
		admTok := mustAPIToken(t, e, admin, `{"name":"ops","scopes":["admin"]}`)
		for _, tok := range []string{read.Token, admTok.Token} {
			mustError(t, e.call(t, tok, http.MethodPost, "/api/v1/tokens", `{"name":"x","scopes":["read"]}`), http.StatusForbidden, "forbidden", "API token cannot")
			mustError(t, e.call(t, tok, http.MethodGet, "/api/v1/tokens", ""), http.StatusForbidden, "forbidden", "API token cannot")
			mustError(t, e.call(t, tok, http.MethodDelete, "/api/v1/sessions/current", ""), http.StatusForbidden, "forbidden", "API token cannot")
		}
	})
	t.Run("only an admin grants admin", func(t *testing.T) {
		mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/tokens", `{"name":"x","scopes":["admin"]}`), http.StatusForbidden, "forbidden", "admin scope")
	})
	t.Run("bad requests", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"name":"x","scopes":["read"],"expires_in":-1}`:       "expires_in",
			`{"name":"x","scopes":["read"],"expires_in":99999999}`: "expires_in",
			`{"name":"x","scopes":["sudo"]}`:                       "read, write or admin",
			`{"name":"x"}`:                                         "scopes",
			`{"scopes":["read"]}`:                                  "name",
			`{"name":"x","scopes":["read"],"extra":1}`:             "extra",
		} {
			mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/tokens", body), http.StatusBadRequest, "invalid", want)
		}
	})
	t.Run("list shows no secrets and the last use", func(t *testing.T) {
		var got struct{ Tokens []apiTokenJSON }
		mustJSON(t, e.call(t, bob, http.MethodGet, "/api/v1/tokens", ""), http.StatusOK, &got)
		if len(got.Tokens) != 2 {
			t.Fatalf("listed %+v", got.Tokens)
		}
		for _, tok := range got.Tokens {
			if tok.Token != "" || strings.Contains(e.call(t, bob, http.MethodGet, "/api/v1/tokens", "").Body.String(), "pat_") {
				t.Fatalf("the listing shows a secret: %+v", tok)
			}
			if tok.LastUsedAt == nil {
				t.Fatalf("token %s was used but has no last use", tok.Name)
			}
		}
	})
	t.Run("only the owner or an admin sees and revokes", func(t *testing.T) {
		carol := e.signUp(t, "carol")
		mustError(t, e.call(t, carol, http.MethodGet, "/api/v1/tokens?user=bob", ""), http.StatusForbidden, "forbidden", "only an admin")
		mustError(t, e.call(t, carol, http.MethodDelete, "/api/v1/tokens/"+read.ID+"?user=bob", ""), http.StatusForbidden, "forbidden", "only an admin")
		// carol's own list does not have bob's token, and revoking it as hers finds nothing.
		mustError(t, e.call(t, carol, http.MethodDelete, "/api/v1/tokens/"+read.ID, ""), http.StatusNotFound, "not_found", "token")
		var got struct{ Tokens []apiTokenJSON }
		mustJSON(t, e.call(t, admin, http.MethodGet, "/api/v1/tokens?user=BOB", ""), http.StatusOK, &got)
		if len(got.Tokens) != 2 {
			t.Fatalf("the admin sees %d of bob's tokens", len(got.Tokens))
		}
		if w := e.call(t, admin, http.MethodDelete, "/api/v1/tokens/"+write.ID+"?user=bob", ""); w.Code != http.StatusNoContent {
			t.Fatalf("admin revoke = %d %s", w.Code, w.Body)
		}
		mustErrorBody(t, e.call(t, write.Token, http.MethodGet, "/api/v1/rooms/general/messages", ""), http.StatusUnauthorized, "unauthorized")
	})
	t.Run("revoke", func(t *testing.T) {
		if w := e.call(t, bob, http.MethodDelete, "/api/v1/tokens/"+read.ID, ""); w.Code != http.StatusNoContent {
			t.Fatalf("revoke = %d %s", w.Code, w.Body)
		}
		mustErrorBody(t, e.call(t, read.Token, http.MethodGet, "/api/v1/rooms", ""), http.StatusUnauthorized, "unauthorized")
		mustError(t, e.call(t, bob, http.MethodDelete, "/api/v1/tokens/"+read.ID, ""), http.StatusNotFound, "not_found", "token")
	})
	t.Run("expiry", func(t *testing.T) {
		short := mustAPIToken(t, e, bob, `{"name":"short","scopes":["read"],"expires_in":60}`)
		if w := e.call(t, short.Token, http.MethodGet, "/api/v1/rooms", ""); w.Code != http.StatusOK {
			t.Fatalf("fresh token = %d %s", w.Code, w.Body)
		}
		e.Clock.Advance(time.Minute + account.DefaultCacheTTL)
		mustErrorBody(t, e.call(t, short.Token, http.MethodGet, "/api/v1/rooms", ""), http.StatusUnauthorized, "unauthorized")
	})
}

// An admin's token without the admin scope acts as a plain user: no admin
// route, and no admin override in the domains.
func TestAPITokens_AdminNeedsAdminScope(t *testing.T) {
	e := newMatrixEnv(t)
	admin := e.signUp(t, "alice")
	bob := e.signUp(t, "bob")
	if w := e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"bobs"}`); w.Code != http.StatusCreated {
		t.Fatalf("create room = %d %s", w.Code, w.Body)
	}
	write := mustAPIToken(t, e.fullEnv, admin, `{"name":"w","scopes":["write"]}`)
	mustError(t, e.call(t, write.Token, http.MethodDelete, "/api/v1/rooms/bobs", ""), http.StatusForbidden, "forbidden", "")
	mustError(t, e.call(t, write.Token, http.MethodPost, "/api/v1/cluster/verify", ""), http.StatusForbidden, "forbidden", "the admin scope")
	adm := mustAPIToken(t, e.fullEnv, admin, `{"name":"a","scopes":["admin"]}`)
	if w := e.call(t, adm.Token, http.MethodDelete, "/api/v1/rooms/bobs", ""); w.Code != http.StatusNoContent {
		t.Fatalf("delete with the admin scope = %d %s", w.Code, w.Body)
	}
}

// While some node runs an older build, creating and revoking tokens is
// refused with 503 upgrade_in_progress, retryable.
func TestAPITokens_RefusedDuringUpgrade(t *testing.T) {
	rep := statetest.NewReplicator(2, account.StateMachine{})
	acc, err := account.NewService(rep, account.Config{Hasher: passwordtest.Hasher(), Now: rep.Now, ClusterProtocol: func() int { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Config{Accounts: acc, APITokens: acc})
	if w := e.do(t, http.MethodPost, "/api/v1/users", `{"username":"alice","password":"password-alice"}`); w.Code != http.StatusCreated {
		t.Fatalf("register = %d %s", w.Code, w.Body)
	}
	var s sessionResponse
	mustJSON(t, e.do(t, http.MethodPost, "/api/v1/sessions", `{"username":"alice","password":"password-alice"}`), http.StatusCreated, &s)
	for _, req := range [][2]string{{http.MethodPost, "/api/v1/tokens"}, {http.MethodDelete, "/api/v1/tokens/0123456789abcdef"}} {
		w := e.do(t, req[0], req[1], `{"name":"bot","scopes":["read"]}`, "Authorization", "Bearer "+s.Token)
		msg := mustErrorBody(t, w, http.StatusServiceUnavailable, "upgrade_in_progress")
		if !strings.Contains(w.Body.String(), `"retryable":true`) || w.Header().Get("Retry-After") == "" {
			t.Fatalf("%s %s: %s (Retry-After %q) is not retryable", req[0], req[1], w.Body, w.Header().Get("Retry-After"))
		}
		if !strings.Contains(msg.Message, "upgrade") {
			t.Fatalf("message %q does not say why", msg.Message)
		}
	}
}
