package testcluster_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// retrying runs call until it succeeds or fails with a non-retryable error,
// reusing one idempotency key, so that a call landing on a new leader, or
// on a node whose gossip has not yet seen every node's protocol, is
// applied once.
func retrying(t *testing.T, what string, call func(ctx context.Context) error) error {
	t.Helper()
	ctx := client.WithIdempotencyKey(apiCtx(t), fmt.Sprintf("%s-%d", what, time.Now().UnixNano()))
	for {
		err := call(ctx)
		if err == nil || !client.IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Roles, mutes and bans are replicated state: after the leader of the
// room's partition is killed, every rule still holds on the new leader, on
// every node, and on the old leader once it is back.
func TestModeration_SurvivesLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	signUpAdmin(t, c, 0, "root")
	olga := signUp(t, c, 0, 0, "olga")
	mona := signUp(t, c, 1, 1, "mona")
	bob := signUp(t, c, 2, 2, "bob")
	eve := signUp(t, c, 2, 2, "eve")

	must := func(what string, call func(ctx context.Context) error) {
		t.Helper()
		if err := retrying(t, what, call); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("create", func(ctx context.Context) error {
		_, err := olga.CreateRoom(ctx, client.RoomSpec{Name: "town"})
		return err
	})
	for _, u := range []*client.Client{mona, bob} {
		must("join", func(ctx context.Context) error { _, err := u.JoinRoom(ctx, "town", ""); return err })
	}
	must("role", func(ctx context.Context) error { _, err := olga.SetRole(ctx, "town", "mona", "moderator"); return err })
	must("mute", func(ctx context.Context) error {
		_, err := mona.Moderate(ctx, "town", "bob", "mute", client.SanctionOptions{Duration: time.Hour, Reason: "flood"})
		return err
	})
	must("ban", func(ctx context.Context) error {
		_, err := mona.Moderate(ctx, "town", "eve", "ban", client.SanctionOptions{Reason: "spam"})
		return err
	})
	must("settings", func(ctx context.Context) error {
		topic := "before the failover"
		_, err := olga.UpdateRoomSettings(ctx, "town", client.RoomSettings{Topic: &topic})
		return err
	})

	leader := c.LeaderOf(c.Node(0).Router().PartitionOf("town"))
	if leader < 0 {
		t.Fatal("no leader for the room's partition")
	}
	t.Logf("killing n%d, the leader of the room's partition", leader+1)
	c.Kill(leader)
	other := (leader + 1) % 3

	checkRules := func(t *testing.T, via int) {
		t.Helper()
		ctx := apiCtx(t)
		_, err := as(c, via, bob).Post(ctx, "town", "am I muted?", client.PostOptions{})
		mustStatus(t, err, http.StatusForbidden, "forbidden")
		_, err = as(c, via, eve).JoinRoom(ctx, "town", "")
		mustStatus(t, err, http.StatusForbidden, "forbidden")
		_, err = as(c, via, eve).History(ctx, "town", client.HistoryOptions{})
		mustStatus(t, err, http.StatusForbidden, "forbidden")
		members, err := as(c, via, bob).Members(ctx, "town")
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]string{}
		for _, m := range members {
			roles[m.Username] = m.Role
		}
		if roles["olga"] != "owner" || roles["mona"] != "moderator" || roles["bob"] != "member" {
			t.Fatalf("roles via n%d = %v", via+1, roles)
		}
		room, err := as(c, via, bob).GetRoom(ctx, "town")
		if err != nil || room.Topic != "before the failover" {
			t.Fatalf("room via n%d = %+v, %v", via+1, room, err)
		}
	}
	t.Run("after the failover", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			if i != leader {
				checkRules(t, i)
			}
		}
	})
	t.Run("moderation goes on with the new leader", func(t *testing.T) {
		must("unmute", func(ctx context.Context) error {
			_, err := as(c, other, mona).Moderate(ctx, "town", "bob", "unmute", client.SanctionOptions{})
			return err
		})
		must("post", func(ctx context.Context) error {
			_, err := as(c, other, bob).Post(ctx, "town", "thanks", client.PostOptions{})
			return err
		})
		must("mute again", func(ctx context.Context) error {
			_, err := as(c, other, mona).Moderate(ctx, "town", "bob", "mute", client.SanctionOptions{Duration: time.Hour})
			return err
		})
	})
	c.Restart(leader)
	t.Run("the old leader, back, agrees", func(t *testing.T) {
		checkRules(t, leader)
		var log client.ModerationLog
		must("moderation log", func(ctx context.Context) (err error) {
			log, err = as(c, leader, mona).Moderation(ctx, "town")
			return err
		})
		var kinds []string
		for _, ev := range log.Events {
			kinds = append(kinds, ev.Kind+" "+ev.Sender+" "+ev.User)
		}
		want := fmt.Sprint([]string{"role olga mona", "mute mona bob", "ban mona eve", "settings olga ", "unmute mona bob", "mute mona bob"})
		if fmt.Sprint(kinds) != want {
			t.Fatalf("moderation events = %q, want %s", kinds, want)
		}
	})
	c.VerifyReplicas(time.Minute)
}
