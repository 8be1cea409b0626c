package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// memTokens is a JoinTokens in memory.
type memTokens struct {
	made    []JoinToken
	revoked []string
}

func (m *memTokens) ListJoinTokens(context.Context) ([]JoinToken, error) { return m.made, nil }

func (m *memTokens) CreateJoinToken(_ context.Context, name string, ttl time.Duration) (JoinToken, error) {
	t := JoinToken{ID: "t1", Name: name, CreatedAt: time.Unix(1, 0).UTC()}
	m.made = append(m.made, t)
	t.Token = "PRLY1.secret"
	return t, nil
}

func (m *memTokens) RevokeJoinToken(_ context.Context, id string) error {
	if id != "t1" {
		return errs.New(errs.NotFound, "no join token %q", id)
	}
	m.revoked = append(m.revoked, id)
	return nil
}

func (m *memTokens) RotateJoinTokens(ctx context.Context) (JoinToken, error) {
	return m.CreateJoinToken(ctx, "rotated", 0)
}

// Join tokens are an admin's: others get 403 and change nothing; the secret
// is in the answer that made the token only; a bad name or TTL is a 400
// naming the field.
func TestJoinTokens_AdminOnly(t *testing.T) {
	tok := &memTokens{}
	e := newFullEnv(t, envOptions{cfg: Config{Tokens: tok}})
	admin, user := e.signUp(t, "alice"), e.signUp(t, "bob")
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/cluster/tokens", ""},
		{http.MethodPost, "/api/v1/cluster/tokens", `{"name":"x"}`},
		{http.MethodPost, "/api/v1/cluster/tokens/rotate", "{}"},
		{http.MethodDelete, "/api/v1/cluster/tokens/t1", ""},
	} {
		mustError(t, e.call(t, user, c.method, c.path, c.body), http.StatusForbidden, "forbidden", "only an admin")
	}
	if len(tok.made) != 0 || len(tok.revoked) != 0 {
		t.Fatalf("a refused call changed tokens: %+v", tok)
	}
	var made JoinToken
	mustJSON(t, e.call(t, admin, http.MethodPost, "/api/v1/cluster/tokens", `{"name":"n4","ttl_seconds":3600}`), http.StatusCreated, &made)
	if made.Token == "" || made.Name != "n4" {
		t.Fatalf("created %+v", made)
	}
	w := e.call(t, admin, http.MethodGet, "/api/v1/cluster/tokens", "")
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), "secret") {
		t.Fatalf("list = %d %s", w.Code, w.Body)
	}
	mustError(t, e.call(t, admin, http.MethodPost, "/api/v1/cluster/tokens", "{\"name\":\"a\\u001b[2J\"}"), http.StatusBadRequest, "invalid", "name: control character U+001B")
	mustError(t, e.call(t, admin, http.MethodPost, "/api/v1/cluster/tokens", `{"ttl_seconds":-1}`), http.StatusBadRequest, "invalid", "ttl_seconds")
	mustError(t, e.call(t, admin, http.MethodDelete, "/api/v1/cluster/tokens/nope", ""), http.StatusNotFound, "not_found", "nope")
	mustJSON(t, e.call(t, admin, http.MethodDelete, "/api/v1/cluster/tokens/t1", ""), http.StatusOK, nil)
	if len(tok.made) != 1 || len(tok.revoked) != 1 {
		t.Fatalf("tokens %+v", tok)
	}
}
