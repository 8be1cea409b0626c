package testcluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// sessionWindow is how late a logout may reach a stream on another node:
// the README's second.
const sessionWindow = account.MaxCacheTTL

// sessionSlack absorbs the scheduling delays of a loaded test machine.
const sessionSlack = time.Second

// shortSession is the lifetime of sessions opened through node 3 of the
// session tests' cluster.
const shortSession = 3 * time.Second

// waitSessionEnded waits until the stream ended with ErrSessionEnded, at
// most within, and returns how long that took. Nothing may come after the
// frames it had delivered before.
func (r *streamReader) waitSessionEnded(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-r.done:
	case <-time.After(within):
		fs, _ := r.snapshot()
		t.Fatalf("stream still open %v later; frames %s", within, fmtFrames(fs))
	}
	took := time.Since(start)
	if fs, err := r.snapshot(); !errors.Is(err, client.ErrSessionEnded) {
		t.Fatalf("stream ended with %v, want ErrSessionEnded; frames %s", err, fmtFrames(fs))
	}
	return took
}

// A session ends every stream it holds open, on whichever node: a logout
// through node 3 closes a stream held on node 1 within the second, and a
// session opened through node 3, which grants short sessions, ends a stream
// on node 1 at its expiry.
func TestStream_SessionEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, ReplicationFactor: 3, NoSync: true,
		Configure: func(i int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			if i == 2 {
				cfg.SessionTTL = shortSession
			}
		},
	})
	alice := signUp(t, c, 0, 0, "alice")
	bob := signUp(t, c, 1, 1, "bob")
	if _, err := bob.CreateRoom(apiCtx(t), client.RoomSpec{Name: "lobby"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.JoinRoom(apiCtx(t), "lobby", ""); err != nil {
		t.Fatal(err)
	}

	t.Run("logout through another node", func(t *testing.T) {
		r := openStream(t, c, 0, alice, client.StreamOptions{Rooms: []string{"lobby"}})
		r.waitReady(t, "lobby")
		if err := as(c, 2, alice).Logout(apiCtx(t)); err != nil {
			t.Fatal(err)
		}
		took := r.waitSessionEnded(t, sessionWindow+sessionSlack)
		t.Logf("the stream on n1 ended %v after the logout through n3 returned", took)
		_, err := as(c, 0, alice).ListRooms(apiCtx(t))
		mustStatus(t, err, 401, "unauthorized")
	})

	t.Run("expiry", func(t *testing.T) {
		loggedIn := time.Now()
		short := signIn(t, c, 2, "alice") // a session of shortSession
		r := openStream(t, c, 0, short, client.StreamOptions{Rooms: []string{"lobby"}})
		r.waitReady(t, "lobby")
		r.waitSessionEnded(t, shortSession+sessionSlack)
		if d := time.Since(loggedIn); d < shortSession-100*time.Millisecond {
			t.Fatalf("stream ended %v after the login, before the session's %v expiry", d, shortSession)
		}
		t.Logf("the stream ended %v after the login, for a %v session", time.Since(loggedIn), shortSession)
	})
}
