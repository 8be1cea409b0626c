package api

import (
	"net/http"
	"testing"

	"github.com/parley-chat/parley/internal/stream"
)

// A stream opened with an API token may subscribe to what its scopes allow
// only: a token narrowed to one room gets the forbidden error frame for
// another room, and a read token may not send typing frames.
func TestStream_TokenScopes(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	alice := e.signUp(t, "alice")
	e.room(t, alice, "mine", false, 1)
	e.room(t, alice, "other", false, 1)
	tok := mustAPIToken(t, e.fullEnv, alice, `{"name":"watcher","scopes":["read:room/mine"]}`)

	c := e.mustDial(t, "", "Authorization", "Bearer "+tok.Token)
	send(t, c, `{"type":"subscribe","room":"mine","after":0}`)
	send(t, c, `{"type":"subscribe","room":"other","after":0}`)
	send(t, c, `{"type":"typing","room":"mine"}`)
	var readyMine bool
	var refused []wireFrame
	for i := 0; i < 20 && (!readyMine || len(refused) < 2); i++ {
		f := next(t, c)
		switch {
		case f.Type == "ready" && f.Room == "mine":
			readyMine = true
		case f.Type == "error":
			refused = append(refused, f)
		case f.Room == "other":
			t.Fatalf("a token narrowed to room mine got a frame of room other: %+v", f)
		}
	}
	if !readyMine {
		t.Fatal("the subscription the token allows never became ready")
	}
	if len(refused) != 2 || refused[0].Room != "other" || refused[0].Code != "forbidden" || refused[1].Room != "mine" || refused[1].Code != "forbidden" {
		t.Fatalf("refusals = %+v, want forbidden for subscribing to other, then for typing in mine", refused)
	}

	// The stream of a token that is not narrowed reaches every room it may.
	all := mustAPIToken(t, e.fullEnv, alice, `{"name":"all","scopes":["read"]}`)
	c2 := e.mustDial(t, "?rooms=other&after=other:0", "Authorization", "Bearer "+all.Token)
	for i := 0; ; i++ {
		f := next(t, c2)
		if f.Type == "error" {
			t.Fatalf("a read token's subscription refused: %+v", f)
		}
		if f.Type == "ready" && f.Room == "other" {
			break
		}
		if i > 20 {
			t.Fatal("no ready frame")
		}
	}
	if w := e.call(t, all.Token, http.MethodGet, "/api/v1/rooms", ""); w.Code != http.StatusOK {
		t.Fatalf("the read token = %d %s", w.Code, w.Body)
	}
}
