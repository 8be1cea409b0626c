package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
)

// TestOutHooks_API: making, listing, deleting outgoing hooks and reading
// their logs through the API; refusals name the problem and change nothing.
func TestOutHooks_API(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	alice := e.signUp(t, "alice") // the admin
	bob := e.signUp(t, "bob")
	carol := e.signUp(t, "carol")
	if w := e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"ops"}`); w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	e.call(t, carol, http.MethodPost, "/api/v1/rooms/ops/join", "")
	const path = "/api/v1/rooms/ops/outgoing-hooks"

	refusals := []struct {
		token, body string
		status      int
		code, says  string
	}{
		{carol, `{"name":"x","url":"https://93.184.215.14/"}`, http.StatusForbidden, "forbidden", "owner"},
		{bob, `{"name":"x","url":"http://10.1.2.3/hook"}`, http.StatusForbidden, "forbidden", "private address"},
		{bob, `{"name":"x","url":"http://127.0.0.1:8080/hook"}`, http.StatusForbidden, "forbidden", "loopback"},
		{bob, `{"name":"x","url":"http://[::ffff:169.254.169.254]/latest/meta-data"}`, http.StatusForbidden, "forbidden", "link-local"},
		{bob, `{"name":"x","url":"gopher://93.184.215.14/"}`, http.StatusBadRequest, "invalid", "scheme"},
		{bob, `{"name":"x","url":"https://user:pw@93.184.215.14/"}`, http.StatusBadRequest, "invalid", "user information"},
		{bob, `{"name":"x","url":"https://93.184.215.14/","trigger_words":["two words"]}`, http.StatusBadRequest, "invalid", "trigger_words"},
		{bob, `{"name":"","url":"https://93.184.215.14/"}`, http.StatusBadRequest, "invalid", "name"},
		{bob, `{"name":"x","url":"https://93.184.215.14/` + strings.Repeat("a", chat.MaxHookURL) + `"}`, http.StatusBadRequest, "invalid", "url"},
	}
	for _, r := range refusals {
		before := e.stored()
		mustError(t, e.call(t, r.token, http.MethodPost, path, r.body), r.status, r.code, r.says)
		if e.stored() != before {
			t.Fatalf("refused %s changed state", r.body)
		}
	}

	var h chat.OutHook
	mustJSON(t, e.call(t, bob, http.MethodPost, path, `{"name":"ci","url":"https://93.184.215.14/hook","trigger_words":["deploy"]}`), http.StatusCreated, &h)
	if h.Secret == "" || h.Creator != "bob" || h.URL != "https://93.184.215.14/hook" || len(h.TriggerWords) != 1 {
		t.Fatalf("created %+v", h)
	}
	var list struct{ Hooks []chat.OutHook }
	mustJSON(t, e.call(t, alice, http.MethodGet, path, ""), http.StatusOK, &list)
	if len(list.Hooks) != 1 || list.Hooks[0].ID != h.ID || list.Hooks[0].Secret != "" {
		t.Fatalf("list %+v: want the hook without its secret", list.Hooks)
	}
	var log struct{ Deliveries []chat.DeliveryAttempt }
	mustJSON(t, e.call(t, bob, http.MethodGet, path+"/"+h.ID+"/deliveries", ""), http.StatusOK, &log)
	if len(log.Deliveries) != 0 {
		t.Fatalf("deliveries before any message: %+v", log.Deliveries)
	}
	mustError(t, e.call(t, carol, http.MethodGet, path+"/"+h.ID+"/deliveries", ""), http.StatusForbidden, "forbidden", "owner")
	mustError(t, e.call(t, bob, http.MethodGet, path+"/0000000000000000/deliveries", ""), http.StatusNotFound, "not_found", "no outgoing webhook")
	mustError(t, e.call(t, bob, http.MethodDelete, path+"/nothex", ""), http.StatusBadRequest, "invalid", "hook id")
	if w := e.call(t, bob, http.MethodDelete, path+"/"+h.ID, ""); w.Code != http.StatusNoContent {
		t.Fatalf("delete = %d %s", w.Code, w.Body)
	}
	mustError(t, e.call(t, bob, http.MethodDelete, path+"/"+h.ID, ""), http.StatusNotFound, "not_found", "no outgoing webhook")
}
