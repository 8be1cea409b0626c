package api

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/stream"
)

// sessionWindow is how late a revocation may end a stream: the README's
// promise that a logout stops the token on every node within a second.
const sessionWindow = account.MaxCacheTTL

// sessionSlack absorbs the scheduling delays of a loaded test machine.
const sessionSlack = 500 * time.Millisecond

// closeUnauthorized is the close status that follows an unauthorized
// frame (docs/STREAMS-AUTH.md).
const closeUnauthorized websocket.StatusCode = 4001

// readUntilClose reads frames until the server closes the connection, at
// most within, and returns them with the close status.
func readUntilClose(t *testing.T, c *websocket.Conn, within time.Duration) ([]wireFrame, websocket.StatusCode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var frames []wireFrame
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("stream still open after %v; frames %+v", within, frames)
			}
			return frames, websocket.CloseStatus(err)
		}
		var f wireFrame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		frames = append(frames, f)
	}
}

// mustEndUnauthorized checks that the stream's next and last frame is the
// connection's unauthorized error, followed by close 4001, within within.
func mustEndUnauthorized(t *testing.T, c *websocket.Conn, within time.Duration) {
	t.Helper()
	frames, st := readUntilClose(t, c, within)
	if len(frames) != 1 || frames[0].Type != stream.TypeError || frames[0].Code != stream.CodeUnauthorized || frames[0].Room != "" {
		t.Fatalf("frames %+v, want exactly the connection's unauthorized error", frames)
	}
	if st != closeUnauthorized {
		t.Fatalf("closed with %d, want %d", st, closeUnauthorized)
	}
}

// A stream ends with the unauthorized frame once its token is revoked:
// at once when the logout goes through this node, within the revocation
// window when it goes through another. Nothing reaches it afterwards: not
// an event posted after the logout, not a subscription's history.
func TestStream_Revocation(t *testing.T) {
	t.Run("logout on this node", func(t *testing.T) {
		e := newStreamEnv(t, stream.Config{})
		alice, bob := e.signUp(t, "alice"), e.signUp(t, "bob")
		e.room(t, bob, "lobby", false, 1)
		e.room(t, bob, "archive", false, 3)
		mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/rooms/lobby/join", ""), http.StatusOK, nil)
		c := e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+alice)
		if f := next(t, c); f.Type != stream.TypeReady {
			t.Fatalf("first frame %+v, want ready", f)
		}
		start := time.Now()
		if w := e.call(t, alice, http.MethodDelete, "/api/v1/sessions/current", ""); w.Code != http.StatusNoContent {
			t.Fatalf("logout = %d %s", w.Code, w.Body)
		}
		if w := e.call(t, bob, http.MethodPost, "/api/v1/rooms/lobby/messages", `{"text":"psst","to":["alice"]}`); w.Code != http.StatusCreated {
			t.Fatalf("whisper = %d %s", w.Code, w.Body)
		}
		e.streams.publish("lobby")
		// The server may have closed already: a failed write is fine.
		_ = c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"subscribe","room":"archive","after":0}`))
		mustEndUnauthorized(t, c, sessionWindow+sessionSlack)
		t.Logf("stream ended %v after the logout began", time.Since(start))
	})
	t.Run("subscribe after a logout elsewhere", func(t *testing.T) {
		e := newStreamEnv(t, stream.Config{})
		alice, bob := e.signUp(t, "alice"), e.signUp(t, "bob")
		e.room(t, bob, "archive", false, 3)
		c := e.mustDial(t, "", "Authorization", "Bearer "+alice)
		other := otherNodeAccounts(t, e)
		if err := other.Logout(context.Background(), alice); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(time.Second) // this node's cached answer is now too old
		send(t, c, `{"type":"subscribe","room":"archive","after":0}`)
		mustEndUnauthorized(t, c, sessionWindow+sessionSlack)
	})
	t.Run("logout on another node", func(t *testing.T) {
		e := newStreamEnv(t, stream.Config{})
		alice := e.signUp(t, "alice")
		e.room(t, alice, "lobby", false, 1)
		c := e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+alice)
		if f := next(t, c); f.Type != stream.TypeReady {
			t.Fatalf("first frame %+v, want ready", f)
		}
		other := otherNodeAccounts(t, e)
		if err := other.Logout(context.Background(), alice); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(time.Second) // this node's cached answer is now too old
		start := time.Now()
		mustEndUnauthorized(t, c, sessionWindow+sessionSlack)
		t.Logf("stream ended %v after the cached answer expired", time.Since(start))
	})
}

// otherNodeAccounts returns an account service over e's replicated state
// with its own session cache: another node's.
func otherNodeAccounts(t *testing.T, e *streamEnv) *account.Service {
	t.Helper()
	s, err := account.NewService(e.AccountRep, account.Config{
		Hasher: passwordtest.Hasher(),
		Now:    e.Clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A session that expires while its stream is open ends the stream at
// expiry, not before, with the unauthorized frame.
func TestStream_SessionExpiry(t *testing.T) {
	const ttl = 1500 * time.Millisecond
	e := newStreamEnvWith(t, stream.Config{}, envOptions{sessionTTL: ttl})
	loggedIn := time.Now()
	alice := e.signUp(t, "alice")
	e.room(t, alice, "lobby", false, 1)
	c := e.mustDial(t, "?rooms=lobby", "Authorization", "Bearer "+alice)
	if f := next(t, c); f.Type != stream.TypeReady {
		t.Fatalf("first frame %+v, want ready", f)
	}
	mustEndUnauthorized(t, c, ttl+sessionSlack)
	if d := time.Since(loggedIn); d < ttl {
		t.Fatalf("stream ended %v after the login, before the session's %v expiry", d, ttl)
	}
}

// The default recheck and the account service's default cache together
// stay within the second a logout promises.
func TestConfig_StreamRecheck(t *testing.T) {
	if w := stream.DefaultRecheck + account.DefaultCacheTTL; w > account.MaxCacheTTL {
		t.Fatalf("a revocation through another node may reach a stream after %v, over %v", w, account.MaxCacheTTL)
	}
}
