package testcluster_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Personal API tokens on a cluster where some nodes hold no replica of a
// user's partition: a read token reads on every node and cannot post; a
// narrowed write token posts to its room only; a token revoked through one
// node is refused on every node within a second, like a logout; an expired
// token is refused everywhere.
func TestAPI_Tokens(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 4, 3)
	waitProtocol(t, c, account.TokenProtocol)
	ctx := apiCtx(t)
	alice := signUp(t, c, 0, 3, "alice")
	if _, err := alice.CreateRoom(ctx, client.RoomSpec{Name: "general"}); err != nil {
		t.Fatal(err)
	}
	create := func(i int, name string, ttl time.Duration, scopes ...string) client.APIToken {
		t.Helper()
		tok, err := as(c, i, alice).CreateAPIToken(ctx, name, scopes, ttl)
		if err != nil {
			t.Fatalf("create token %s via n%d: %v", name, i+1, err)
		}
		return tok
	}

	t.Run("a read token reads everywhere and cannot post", func(t *testing.T) {
		read := create(0, "reader", 0, "read")
		for i := 0; i < c.Len(); i++ {
			cl := anonAt(c, i, client.WithToken(read.Token))
			if _, err := cl.History(ctx, "general", client.HistoryOptions{}); err != nil {
				t.Fatalf("history with a read token via n%d: %v", i+1, err)
			}
			_, err := cl.Post(ctx, "general", "not allowed", client.PostOptions{})
			mustStatus(t, err, http.StatusForbidden, "forbidden")
			if ce, ok := errors.AsType[*client.Error](err); !ok || !strings.Contains(ce.Message, "scopes (read)") {
				t.Fatalf("the refusal via n%d does not name the scope: %v", i+1, err)
			}
		}
		events, err := alice.History(ctx, "general", client.HistoryOptions{})
		if err != nil || len(events) != 1 { // alice's join only
			t.Fatalf("history after refused posts = %s, %v", fmtSeqs(events), err)
		}
	})
	t.Run("a write token narrowed to a room", func(t *testing.T) {
		bot := create(2, "bot", 0, "write:room/general")
		cl := anonAt(c, 1, client.WithToken(bot.Token))
		res, err := cl.Post(ctx, "general", "from the bot", client.PostOptions{})
		if err != nil || res.Sender != "alice" {
			t.Fatalf("post with the bot token = %+v, %v", res, err)
		}
		_, err = cl.CreateRoom(ctx, client.RoomSpec{Name: "elsewhere"})
		mustStatus(t, err, http.StatusForbidden, "forbidden")
		// The node that served the uses shows them at once; the others
		// after the next flush.
		list, err := as(c, 1, alice).APITokens(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, tok := range list {
			if tok.Token != "" {
				t.Fatalf("the listing shows a secret: %+v", tok)
			}
			if tok.ID == bot.ID && tok.LastUsedAt == nil {
				t.Fatalf("the bot token was used through n2 but n2 lists no use: %+v", tok)
			}
		}
	})
	t.Run("revocation reaches every node within 1s", func(t *testing.T) {
		tok := create(1, "revoked", 0, "read")
		for i := 0; i < c.Len(); i++ { // every node has the token cached now
			if _, err := anonAt(c, i, client.WithToken(tok.Token)).ListRooms(ctx); err != nil {
				t.Fatalf("n%d: %v", i+1, err)
			}
		}
		if err := as(c, 2, alice).RevokeAPIToken(ctx, "", tok.ID); err != nil {
			t.Fatal(err)
		}
		refusedEverywhere(t, c, tok.Token, time.Second)
		if _, err := alice.ListRooms(ctx); err != nil {
			t.Fatalf("alice's session stopped too: %v", err)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		tok := create(3, "short", 2*time.Second, "read")
		if tok.ExpiresAt-tok.CreatedAt != 2000 {
			t.Fatalf("lifetime %d ms, want 2000", tok.ExpiresAt-tok.CreatedAt)
		}
		refusedEverywhere(t, c, tok.Token, 30*time.Second)
		list, err := as(c, 0, alice).APITokens(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			if l.ID == tok.ID && !l.Expired {
				t.Fatalf("the expired token is not listed as expired: %+v", l)
			}
		}
	})
}

// refusedEverywhere waits up to within for every node of c to refuse token
// with 401.
func refusedEverywhere(t *testing.T, c *testcluster.Cluster, token string, within time.Duration) {
	t.Helper()
	ctx := apiCtx(t)
	for i := 0; i < c.Len(); i++ {
		cl := anonAt(c, i, client.WithToken(token))
		took := poll.Until(t, within, fmt.Sprintf("token refused on n%d", i+1), func() error {
			_, err := cl.ListRooms(ctx)
			if err == nil {
				return fmt.Errorf("still accepted")
			}
			mustStatus(t, err, http.StatusUnauthorized, "unauthorized")
			return nil
		})
		t.Logf("n%d refused the token %v after the check began", i+1, took)
	}
}
