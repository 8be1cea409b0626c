package testcluster_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Users and sessions through every node: register on n1, log in on the
// last node, post on n2, read history on n3; a logout through one node stops
// the token on every node within a second.
func TestAPI_Accounts(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		ctx := apiCtx(t)
		last := c.Len() - 1
		// The first user is admin, unless the cluster signed in one itself.
		firstUser := c.Client(0).Token() == ""
		u, err := anonAt(c, 0).Register(ctx, "Alice", password("Alice"))
		if err != nil || u.Username != "Alice" || u.Admin != firstUser || u.CreatedAt == 0 {
			t.Fatalf("register = %+v, %v; want Alice, admin %v", u, err, firstUser)
		}
		alice := signIn(t, c, last, "alice")
		if tok := alice.Token(); !strings.HasPrefix(tok, "alice.") {
			t.Fatalf("token %q", tok)
		}
		bob := signUp(t, c, 1, 2, "bob")

		t.Run("register refusals leave users unchanged", func(t *testing.T) {
			for i := 0; i < c.Len(); i++ {
				_, err := anonAt(c, i).Register(ctx, "ALICE", "another password")
				mustStatus(t, err, http.StatusConflict, "conflict")
			}
			_, err := anonAt(c, 1).Register(ctx, "no spaces", password("x"))
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			_, err = anonAt(c, 1).Register(ctx, "carol", "short")
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			// Read back: the refused names do not exist, Alice's password is
			// unchanged.
			_, err = anonAt(c, 2).Login(ctx, "carol", "short")
			mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
			_, err = anonAt(c, 2).Login(ctx, "alice", "another password")
			mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
			signIn(t, c, 2, "ALICE")
			u, err := anonAt(c, 3%c.Len()).Register(ctx, "dave", password("dave"))
			if err != nil || u.Admin {
				t.Fatalf("second user = %+v, %v; want not admin", u, err)
			}
		})
		t.Run("login refusals", func(t *testing.T) {
			for i := 0; i < c.Len(); i++ {
				_, err := anonAt(c, i).Login(ctx, "bob", "wrong password")
				mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
				_, err = anonAt(c, i).Login(ctx, "nobody", password("nobody"))
				mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
			}
		})
		t.Run("a token works on every node", func(t *testing.T) {
			if _, err := alice.CreateRoom(ctx, client.RoomSpec{Name: "lobby"}); err != nil {
				t.Fatal(err)
			}
			res, err := as(c, 1, alice).Post(ctx, "lobby", "hello from n2", client.PostOptions{})
			if err != nil || res.Sender != "Alice" {
				t.Fatalf("post via n2 = %+v, %v", res, err)
			}
			events, err := as(c, 2, alice).History(ctx, "lobby", client.HistoryOptions{})
			if err != nil || len(events) != 2 || events[1].Seq != res.Seq || events[1].Text != "hello from n2" {
				t.Fatalf("history via n3 = %s %+v, %v", fmtSeqs(events), events, err)
			}
		})
		t.Run("no token, no access", func(t *testing.T) {
			for i := 0; i < c.Len(); i++ {
				_, err := anonAt(c, i).ListRooms(ctx)
				mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
				_, err = anonAt(c, i).KVPut(ctx, "k", []byte("v"), client.PutOptions{})
				mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
				_, err = anonAt(c, i, client.WithToken("alice.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")).ListRooms(ctx)
				mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
				if err := anonAt(c, i).Healthz(ctx); err != nil {
					t.Fatalf("healthz on n%d: %v", i+1, err)
				}
			}
		})
		t.Run("logout stops the token everywhere within 1s", func(t *testing.T) {
			sess := signIn(t, c, 0, "bob")
			for i := 0; i < c.Len(); i++ { // every node has the session cached now
				if _, err := as(c, i, sess).ListRooms(ctx); err != nil {
					t.Fatalf("n%d: %v", i+1, err)
				}
			}
			token := sess.Token()
			if err := as(c, 1, sess).Logout(ctx); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < c.Len(); i++ {
				cl := anonAt(c, i, client.WithToken(token))
				took := poll.Until(t, time.Second, fmt.Sprintf("token refused on n%d", i+1), func() error {
					_, err := cl.ListRooms(ctx)
					if err == nil {
						return fmt.Errorf("still accepted")
					}
					mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
					return nil
				})
				t.Logf("n%d refused the token %v after the check began", i+1, took)
			}
			if _, err := bob.ListRooms(ctx); err != nil {
				t.Fatalf("bob's other session stopped too: %v", err)
			}
		})
		t.Run("KV acts as the signed-in user", func(t *testing.T) {
			v, err := as(c, 0, bob).KVPut(ctx, "shared/greeting", []byte("hi"), client.PutOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = as(c, last, bob).KVPut(ctx, "shared/greeting", make([]byte, 2<<20), client.PutOptions{})
			mustStatus(t, err, http.StatusRequestEntityTooLarge, "too_large")
			for i := 0; i < c.Len(); i++ {
				got, ver, err := as(c, i, alice).KVGet(ctx, "shared/greeting", client.GetOptions{})
				if err != nil || !bytes.Equal(got, []byte("hi")) || ver != v {
					t.Fatalf("get via n%d = %q v%d %v, want hi v%d", i+1, got, ver, err, v)
				}
			}
		})
	})
}
