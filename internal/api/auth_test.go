package api

import (
	"net/http"
	"testing"
)

// The bad-token cases of every route are in TestRoutes_PermissionMatrix;
// this checks that a valid token passes, whatever the case of its scheme.
func TestAPI_ValidTokenPasses(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	good := e.signUp(t, "alice")
	t.Run("a valid token passes", func(t *testing.T) {
		if w := e.call(t, good, http.MethodGet, "/api/v1/rooms", ""); w.Code != http.StatusOK {
			t.Fatalf("GET rooms = %d %s", w.Code, w.Body)
		}
		if w := e.call(t, good, http.MethodPut, "/api/v1/kv/k", "v"); w.Code != http.StatusOK {
			t.Fatalf("PUT kv = %d %s", w.Code, w.Body)
		}
		if w := e.do(t, http.MethodPut, "/api/v1/kv/k", "v", "Authorization", "bearer "+good); w.Code != http.StatusOK {
			t.Fatalf("lower-case scheme: PUT kv = %d %s", w.Code, w.Body)
		}
	})
}

func TestAPI_KVActsAsUser(t *testing.T) {
	// KV with accounts: the signed-in user reaches the service.
	e := newFullEnv(t, envOptions{})
	tok := e.signUp(t, "Alice")
	w := e.call(t, tok, http.MethodPut, "/api/v1/kv/a", "v", "Idempotency-Key", "k")
	if w.Code != http.StatusOK || e.kv.lastCall() != `Put user="Alice" key="a" if=0 idem="k"` {
		t.Fatalf("PUT = %d, call %s", w.Code, e.kv.lastCall())
	}
}
