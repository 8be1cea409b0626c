package testcluster_test

import (
	"testing"

	"github.com/parley-chat/parley/client"
)

// In-chat commands act on the KV store as the poster, from any node, and the
// result is part of the message every member sees.
func TestAPI_InChatCommands(t *testing.T) {
	c := newAPICluster(t, 3, 3)
	ctx := apiCtx(t)
	alice := signUpAdmin(t, c, 0, "alice")
	bob := signUp(t, c, 1, 1, "bob")
	if _, err := as(c, 0, alice).CreateRoom(ctx, client.RoomSpec{Name: "ops"}); err != nil {
		t.Fatal(err)
	}
	if _, err := as(c, 1, bob).JoinRoom(ctx, "ops", ""); err != nil {
		t.Fatal(err)
	}
	res, err := as(c, 2, alice).Post(ctx, "ops", "/put motd hello world", client.PostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := as(c, 1, bob).KVGet(ctx, "motd", client.GetOptions{})
	if err != nil || string(v) != "hello world" {
		t.Fatalf("KV after /put = %q, %v", v, err)
	}
	if _, err := as(c, 0, bob).Post(ctx, "ops", "/get motd", client.PostOptions{}); err != nil {
		t.Fatal(err)
	}
	events, err := as(c, 1, alice).History(ctx, "ops", client.HistoryOptions{After: res.Seq - 1, HasAfter: true})
	if err != nil || len(events) != 2 {
		t.Fatalf("history = %+v, %v", events, err)
	}
	if got, want := events[0].Text, "/put motd hello world → stored motd (version 1)"; got != want {
		t.Errorf("put message = %q, want %q", got, want)
	}
	if got, want := events[1].Text, "/get motd → motd = hello world (version 1)"; got != want {
		t.Errorf("get message = %q, want %q", got, want)
	}
}
