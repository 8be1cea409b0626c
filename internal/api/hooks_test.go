package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// hookPath is the path of a hook's URL.
func hookPath(t *testing.T, h hookJSON) string {
	t.Helper()
	const marker = "/api/v1/hooks/"
	i := strings.Index(h.URL, marker)
	if i < 0 || !strings.HasSuffix(h.URL, "/"+h.Key+"/"+h.Secret) {
		t.Fatalf("hook url %q", h.URL)
	}
	return h.URL[i:]
}

func mustCreateHook(t *testing.T, e *fullEnv, token, room, name string) hookJSON {
	t.Helper()
	var h hookJSON
	mustJSON(t, e.call(t, token, http.MethodPost, "/api/v1/rooms/"+room+"/hooks", `{"name":"`+name+`"}`), http.StatusCreated, &h)
	return h
}

// lastEvent is the latest event of room as token's holder reads it.
func lastEvent(t *testing.T, e *fullEnv, token, room string) chat.Event {
	t.Helper()
	var h historyResponse
	mustJSON(t, e.call(t, token, http.MethodGet, "/api/v1/rooms/"+room+"/messages?limit=1", ""), http.StatusOK, &h)
	return h.Messages[len(h.Messages)-1]
}

func TestHooks_API(t *testing.T) {
	e := newFullEnv(t, envOptions{limits: ratelimit.Config{Rates: map[string]ratelimit.Rate{ratelimit.Posts: {N: 3, Per: time.Hour}}}})
	alice := e.signUp(t, "alice") // the admin
	bob := e.signUp(t, "bob")
	carol := e.signUp(t, "carol")
	if w := e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"ops"}`); w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	e.call(t, carol, http.MethodPost, "/api/v1/rooms/ops/join", "")

	mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/rooms/ops/hooks", `{"name":"x"}`), http.StatusForbidden, "forbidden", "owner")
	mustError(t, e.call(t, carol, http.MethodGet, "/api/v1/rooms/ops/hooks", ""), http.StatusForbidden, "forbidden", "owner")
	mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/ops/hooks", `{"name":""}`), http.StatusBadRequest, "invalid", "name")
	mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/ops/hooks", `{"name":"x","colour":1}`), http.StatusBadRequest, "invalid", "colour")

	h := mustCreateHook(t, e, bob, "ops", "CI")
	path := hookPath(t, h)
	if h.Creator != "bob" || h.Room != "ops" || h.Secret == "" {
		t.Fatalf("hook %+v", h)
	}

	t.Run("posts as the bot, Parley and Slack payloads", func(t *testing.T) {
		var res chat.PostResult
		mustJSON(t, e.do(t, http.MethodPost, path, `{"text":"build 7 passed"}`), http.StatusCreated, &res)
		if res.Sender != "hook:CI" {
			t.Fatalf("sender %q", res.Sender)
		}
		mustJSON(t, e.do(t, http.MethodPost, path, `{"text":"deployed","username":"bob","icon_emoji":":rocket:"}`), http.StatusCreated, &res)
		if ev := lastEvent(t, e, carol, "ops"); ev.Sender != "hook:bob" || ev.Text != "deployed" || ev.Seq != res.Seq {
			t.Fatalf("last event %+v", ev)
		}
	})

	t.Run("bad payloads: 400 naming the problem, nothing posted", func(t *testing.T) {
		before := lastEvent(t, e, carol, "ops").Seq
		for body, want := range map[string]string{
			`{}`:                             "text is empty",
			`{"text":"  "}`:                  "blank",
			`{"text":"x","channel":"#gen"}`:  "channel",
			`{"text":7}`:                     "text",
			`[1]`:                            "JSON object",
			`{"text":"x","username":"a\nb"}`: "username",
		} {
			mustError(t, e.do(t, http.MethodPost, path, body), http.StatusBadRequest, "invalid", want)
		}
		mustErrorBody(t, e.do(t, http.MethodPost, path, `{"text":"`+strings.Repeat("x", chat.DefaultMaxText+1)+`"}`), http.StatusRequestEntityTooLarge, "too_large")
		if got := lastEvent(t, e, carol, "ops").Seq; got != before {
			t.Fatalf("refused payloads posted: seq %d, then %d", before, got)
		}
	})

	t.Run("wrong secret or key: 404, the same answer", func(t *testing.T) {
		other := mustCreateHook(t, e, bob, "ops", "other")
		for _, p := range []string{
			"/api/v1/hooks/" + h.Key + "/" + other.Secret,
			"/api/v1/hooks/" + h.Key + "/x",
			"/api/v1/hooks/ops.0000000000000000/" + h.Secret,
			"/api/v1/hooks/nonesuch/" + h.Secret,
		} {
			mustError(t, e.do(t, http.MethodPost, p, `{"text":"x"}`), http.StatusNotFound, "not_found", "no such hook")
		}
	})

	t.Run("listed without secrets (owner and admin), revoked: 404", func(t *testing.T) {
		var list struct{ Hooks []hookJSON }
		mustJSON(t, e.call(t, alice, http.MethodGet, "/api/v1/rooms/ops/hooks", ""), http.StatusOK, &list)
		if len(list.Hooks) != 2 || list.Hooks[0].Secret != "" || list.Hooks[0].URL != "" {
			t.Fatalf("list %+v", list)
		}
		mustError(t, e.call(t, carol, http.MethodDelete, "/api/v1/rooms/ops/hooks/"+h.ID, ""), http.StatusForbidden, "forbidden", "owner")
		if w := e.call(t, bob, http.MethodDelete, "/api/v1/rooms/ops/hooks/"+h.ID, ""); w.Code != http.StatusNoContent {
			t.Fatalf("revoke = %d %s", w.Code, w.Body)
		}
		mustError(t, e.do(t, http.MethodPost, path, `{"text":"x"}`), http.StatusNotFound, "not_found", "no such hook")
		mustError(t, e.call(t, bob, http.MethodDelete, "/api/v1/rooms/ops/hooks/"+h.ID, ""), http.StatusNotFound, "not_found", "no hook")
	})

	t.Run("rate limited per hook, not per guesser", func(t *testing.T) {
		h := mustCreateHook(t, e, bob, "ops", "chatty")
		p := hookPath(t, h)
		for range 5 { // wrong secrets spend nothing
			mustErrorBody(t, e.do(t, http.MethodPost, "/api/v1/hooks/"+h.Key+"/wrong", `{"text":"x"}`), http.StatusNotFound, "not_found")
		}
		for range 3 {
			if w := e.do(t, http.MethodPost, p, `{"text":"x"}`); w.Code != http.StatusCreated {
				t.Fatalf("post = %d %s", w.Code, w.Body)
			}
		}
		before := lastEvent(t, e, carol, "ops").Seq
		w := e.do(t, http.MethodPost, p, `{"text":"x"}`)
		mustErrorBody(t, w, http.StatusTooManyRequests, "rate_limited")
		if w.Header().Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		if got := lastEvent(t, e, carol, "ops").Seq; got != before {
			t.Fatal("a limited post was posted")
		}
		// Another hook has its own budget.
		if w := e.do(t, http.MethodPost, hookPath(t, mustCreateHook(t, e, bob, "ops", "quiet")), `{"text":"x"}`); w.Code != http.StatusCreated {
			t.Fatalf("another hook's post = %d %s", w.Code, w.Body)
		}
	})
}

func TestRoomExport_API(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	alice := e.signUp(t, "alice") // the admin
	bob := e.signUp(t, "bob")
	carol := e.signUp(t, "carol")
	e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"Ops"}`)
	e.call(t, carol, http.MethodPost, "/api/v1/rooms/ops/join", "")
	const posts = 2*chat.ExportPage + 3
	for range posts {
		if w := e.call(t, carol, http.MethodPost, "/api/v1/rooms/ops/messages", `{"text":"hi"}`); w.Code != http.StatusCreated {
			t.Fatalf("post = %d %s", w.Code, w.Body)
		}
	}
	for _, tok := range []string{bob, alice} {
		w := e.call(t, tok, http.MethodGet, "/api/v1/rooms/OPS/export", "")
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/x-ndjson" ||
			w.Header().Get("Content-Disposition") != `attachment; filename="ops.jsonl"` {
			t.Fatalf("export = %d %v", w.Code, w.Header())
		}
		sc := bufio.NewScanner(w.Body)
		var n uint64
		for sc.Scan() {
			var ev chat.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			n++
			if ev.Seq != n || ev.Room != "ops" {
				t.Fatalf("line %d is %+v", n, ev)
			}
		}
		if n != posts+2 {
			t.Fatalf("%d lines, want %d", n, posts+2)
		}
	}
	mustError(t, e.call(t, carol, http.MethodGet, "/api/v1/rooms/ops/export", ""), http.StatusForbidden, "forbidden", "owner")
	mustError(t, e.call(t, bob, http.MethodGet, "/api/v1/rooms/nonesuch/export", ""), http.StatusNotFound, "not_found", "nonesuch")
}

// TestHooks_GuessingRunsAtTheSignInRate: an address that sent a wrong hook
// secret is counted against the per-address sign-in limit on every later
// hook post, the right secret included, so guessing is no faster than
// signing in; another address with the right URL posts on.
func TestHooks_GuessingRunsAtTheSignInRate(t *testing.T) {
	e := newFullEnv(t, envOptions{rateLimit: 4}) // sign-in attempts per minute per address
	bob := e.signUp(t, "bob")                    // 2 attempts of 192.0.2.1
	if w := e.call(t, bob, http.MethodPost, "/api/v1/rooms", `{"name":"ops"}`); w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	h := mustCreateHook(t, e, bob, "ops", "CI")
	post := func(addr, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"text":"x"}`))
		r.RemoteAddr = addr + ":4242"
		return serve(t, e.h, r)
	}
	right, wrong := hookPath(t, h), "/api/v1/hooks/"+h.Key+"/wrong"
	for i := range 3 { // a right post is not counted; the first wrong one is not either
		if w := post("198.51.100.7", right); w.Code != http.StatusCreated {
			t.Fatalf("post %d from a bot = %d %s", i, w.Code, w.Body)
		}
	}
	mustError(t, post("198.51.100.9", wrong), http.StatusNotFound, "not_found", "no such hook")
	mustError(t, post("198.51.100.9", wrong), http.StatusNotFound, "not_found", "no such hook") // 1 of 4
	for range 3 {
		post("198.51.100.9", wrong) // 2, 3, 4 of 4
	}
	mustError(t, post("198.51.100.9", right), http.StatusTooManyRequests, "rate_limited", "")
	if w := post("198.51.100.7", right); w.Code != http.StatusCreated {
		t.Fatalf("the bot's post after another address guessed = %d %s", w.Code, w.Body)
	}
}
