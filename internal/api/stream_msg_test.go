package api

import (
	"net/http"
	"testing"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/stream"
)

// A mention reaches every connection of the mentioned user, subscribed to
// the room or not; a typing frame reaches the room's subscribers.
func TestStream_MentionsAndTyping(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	alice, bob, carol := e.signUp(t, "alice"), e.signUp(t, "bob"), e.signUp(t, "carol")
	e.room(t, alice, "lobby", false, 0)
	for _, tok := range []string{bob, carol} {
		if w := e.call(t, tok, http.MethodPost, "/api/v1/rooms/lobby/join", ""); w.Code != http.StatusOK {
			t.Fatalf("join = %d", w.Code)
		}
	}
	bobs := []*websocket.Conn{e.mustDial(t, "", "Authorization", "Bearer "+bob), e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+bob)}
	watcher := e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+alice)
	// A publish before a connection subscribed would be missed. A
	// connection follows its inbox before it reads frames or subscribes
	// rooms: an answer to a frame, or a room's ready, says it does.
	send(t, bobs[0], `{"type":"typing"}`)
	if f := next(t, bobs[0]); f.Type != stream.TypeError {
		t.Fatalf("frame %+v, want the error that answers a typing frame without a room", f)
	}
	for _, ws := range []*websocket.Conn{bobs[1], watcher} {
		if f := next(t, ws); f.Type != stream.TypeReady {
			t.Fatalf("frame %+v, want ready", f)
		}
	}
	w := e.call(t, alice, http.MethodPost, "/api/v1/rooms/lobby/messages", `{"text":"hi @bob"}`)
	if w.Code != http.StatusCreated {
		t.Fatalf("post = %d %s", w.Code, w.Body)
	}
	e.streams.publish(chat.InboxName("bob"))
	e.streams.publish("lobby")
	for i, ws := range bobs {
		for {
			f := next(t, ws)
			if f.Type == stream.TypeMention {
				if f.Room != "lobby" || f.Seq != 4 {
					t.Fatalf("mention frame %+v", f)
				}
				break
			}
			if f.Type != stream.TypeEvent {
				t.Fatalf("connection %d: frame %+v before the mention", i, f)
			}
		}
	}
	if f := next(t, watcher); f.Type != stream.TypeEvent || f.Seq != 4 {
		t.Fatalf("watcher frame %+v, want event 4", f)
	}
	c := e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+carol)
	if f := next(t, c); f.Type != stream.TypeReady {
		t.Fatalf("frame %+v, want ready", f)
	}
	send(t, c, `{"type":"typing","room":"lobby"}`)
	if f := next(t, watcher); f.Type != stream.TypeTyping || f.Room != "lobby" {
		t.Fatalf("watcher frame %+v, want typing", f)
	}
	if f := next(t, c); f.Type != stream.TypeTyping || f.Room != "lobby" {
		t.Fatalf("typist's own frame %+v, want typing", f)
	}
	send(t, c, `{"type":"typing"}`)
	if f := next(t, c); f.Type != stream.TypeError || f.Code != stream.CodeInvalid {
		t.Fatalf("frame %+v, want invalid (typing needs a room)", f)
	}
}
