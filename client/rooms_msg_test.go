package client_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/api/openapi/openapitest"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/password/passwordtest"
)

func TestClientAPI_MessageChanges(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	admin := s.user(t, "root") // the first user is admin
	alice, bob, carol := s.user(t, "alice"), s.user(t, "bob"), s.user(t, "carol")
	if _, err := alice.CreateRoom(ctx, client.RoomSpec{Name: "lab"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.JoinRoom(ctx, "lab", ""); err != nil {
		t.Fatal(err)
	}
	p, err := bob.Post(ctx, "lab", "first draft", client.PostOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("edit", func(t *testing.T) {
		kctx := client.WithIdempotencyKey(ctx, "edit-1")
		res, err := bob.Edit(kctx, "lab", p.Seq, "final **draft**")
		if err != nil || res.Seq == 0 {
			t.Fatalf("Edit = %+v, %v", res, err)
		}
		if again, err := bob.Edit(kctx, "lab", p.Seq, "final **draft**"); err != nil || again != res {
			t.Fatalf("retried Edit = %+v, %v; want %+v", again, err, res)
		}
		m, err := carol.Message(ctx, "lab", p.Seq)
		if err != nil || m.Text != "final **draft**" || m.EditedAt != res.Ts {
			t.Fatalf("Message = %+v, %v", m, err)
		}
		ev, _ := carol.Message(ctx, "lab", res.Seq)
		if ev.Kind != "edit" || ev.Target != p.Seq || ev.Message == nil || ev.Message.Text != m.Text {
			t.Fatalf("edit event %+v", ev)
		}
		s.unchanged(t, func() {
			_, err = alice.Edit(ctx, "lab", p.Seq, "mine")
			wantStatus(t, err, 403, "forbidden", "author")
			_, err = carol.Edit(ctx, "lab", p.Seq, "x")
			wantStatus(t, err, 403, "forbidden", "join")
			_, err = bob.Edit(ctx, "lab", 999, "x")
			wantStatus(t, err, 404, "not_found", "999")
			_, err = bob.Edit(ctx, "lab", p.Seq, "")
			wantStatus(t, err, 400, "invalid", "text")
			_, err = bob.Edit(ctx, "lab", p.Seq, "a\x1bb")
			wantStatus(t, err, 400, "invalid", "U+001B")
			_, err = bob.Edit(ctx, "nowhere", p.Seq, "x")
			wantStatus(t, err, 404, "not_found", "nowhere")
		})
	})
	t.Run("react", func(t *testing.T) {
		if _, err := alice.React(ctx, "lab", p.Seq, "👍"); err != nil {
			t.Fatal(err)
		}
		if _, err := bob.React(ctx, "lab", p.Seq, ":tada:"); err != nil {
			t.Fatal(err)
		}
		if res, err := bob.React(ctx, "lab", p.Seq, ":tada:"); err != nil || res.Seq != 0 {
			t.Fatalf("second identical reaction = %+v, %v", res, err)
		}
		m, _ := carol.Message(ctx, "lab", p.Seq)
		if len(m.Reactions) != 2 || m.Reactions[0].Emoji != "👍" || m.Reactions[0].Count != 1 || m.Reactions[1].Users[0] != "bob" {
			t.Fatalf("reactions %+v", m.Reactions)
		}
		if _, err := alice.Unreact(ctx, "lab", p.Seq, "👍"); err != nil {
			t.Fatal(err)
		}
		if m, _ = carol.Message(ctx, "lab", p.Seq); len(m.Reactions) != 1 {
			t.Fatalf("after unreact %+v", m.Reactions)
		}
		s.unchanged(t, func() {
			_, err := alice.React(ctx, "lab", p.Seq, "<script>")
			wantStatus(t, err, 400, "invalid", "emoji")
			_, err = alice.React(ctx, "lab", p.Seq, ":not a code:")
			wantStatus(t, err, 400, "invalid", "emoji")
			_, err = carol.React(ctx, "lab", p.Seq, "👍")
			wantStatus(t, err, 403, "forbidden", "join")
			_, err = alice.React(ctx, "lab", 1, "👍")
			wantStatus(t, err, 404, "not_found", "join event")
		})
	})
	var reply client.PostResult
	t.Run("thread", func(t *testing.T) {
		reply, err = alice.Post(ctx, "lab", "looks good @bob", client.PostOptions{ReplyTo: p.Seq})
		if err != nil {
			t.Fatal(err)
		}
		th, err := carol.Thread(ctx, "lab", p.Seq, 0, 0)
		if err != nil || th.Root.ReplyCount != 1 || th.Root.LastReplyAt != reply.Ts || len(th.Replies) != 1 || th.Replies[0].ReplyTo != p.Seq {
			t.Fatalf("Thread = %+v, %v", th, err)
		}
		if th, _ = carol.Thread(ctx, "lab", p.Seq, reply.Seq, 0); len(th.Replies) != 0 {
			t.Fatalf("thread after the last reply %+v", th.Replies)
		}
		s.unchanged(t, func() {
			_, err = alice.Post(ctx, "lab", "x", client.PostOptions{ReplyTo: 999})
			wantStatus(t, err, 404, "not_found", "reply_to")
			_, err = carol.Thread(ctx, "lab", 999, 0, 0)
			wantStatus(t, err, 404, "not_found", "999")
			_, err = carol.Thread(ctx, "lab", p.Seq, 0, 100000)
			wantStatus(t, err, 400, "invalid", "limit")
		})
	})
	t.Run("mentions", func(t *testing.T) {
		page, err := bob.Mentions(ctx, "", 0)
		if err != nil || len(page.Mentions) != 1 || page.Mentions[0].Seq != reply.Seq || page.Next == "" {
			t.Fatalf("Mentions = %+v, %v", page, err)
		}
		rooms, _ := bob.ListRooms(ctx)
		if rooms[0].UnreadMentions != 1 {
			t.Fatalf("unread_mentions %+v", rooms[0])
		}
		if _, err := bob.MarkRead(ctx, "lab", reply.Seq); err != nil {
			t.Fatal(err)
		}
		if rooms, _ = bob.ListRooms(ctx); rooms[0].UnreadMentions != 0 {
			t.Fatalf("after reading: unread_mentions %+v", rooms[0])
		}
		if next, err := bob.Mentions(ctx, page.Next, 10); err != nil || len(next.Mentions) != 0 {
			t.Fatalf("next page %+v, %v", next, err)
		}
		_, err = bob.Mentions(ctx, "yesterday", 0)
		wantStatus(t, err, 400, "invalid", "after")
	})
	t.Run("pins", func(t *testing.T) {
		if _, err := alice.Pin(ctx, "lab", p.Seq); err != nil {
			t.Fatal(err)
		}
		pins, err := carol.Pins(ctx, "lab")
		if err != nil || len(pins) != 1 || pins[0].Seq != p.Seq || !pins[0].Pinned {
			t.Fatalf("Pins = %+v, %v", pins, err)
		}
		s.unchanged(t, func() {
			_, err = carol.Pin(ctx, "lab", p.Seq)
			wantStatus(t, err, 403, "forbidden", "join")
			_, err = alice.Pin(ctx, "lab", 999)
			wantStatus(t, err, 404, "not_found", "999")
		})
		if _, err := bob.Unpin(ctx, "lab", p.Seq); err != nil {
			t.Fatal(err)
		}
		if pins, _ = carol.Pins(ctx, "lab"); len(pins) != 0 {
			t.Fatalf("after unpin %+v", pins)
		}
	})
	t.Run("delete", func(t *testing.T) {
		s.unchanged(t, func() {
			_, err := alice.DeleteMessage(ctx, "lab", reply.Seq+100)
			wantStatus(t, err, 404, "not_found", "")
		})
		bobs, _ := bob.Post(ctx, "lab", "oops", client.PostOptions{})
		s.unchanged(t, func() {
			_, err := carol.DeleteMessage(ctx, "lab", bobs.Seq)
			wantStatus(t, err, 403, "forbidden", "author")
		})
		for _, who := range []*client.Client{bob, alice, admin} { // author, owner, admin
			m, _ := bob.Post(ctx, "lab", "to delete", client.PostOptions{})
			if res, err := who.DeleteMessage(ctx, "lab", m.Seq); err != nil || res.Seq == 0 {
				t.Fatalf("DeleteMessage = %+v, %v", res, err)
			}
			tomb, _ := carol.Message(ctx, "lab", m.Seq)
			if !tomb.Deleted || tomb.Text != "" {
				t.Fatalf("tombstone %+v", tomb)
			}
		}
		if res, err := bob.DeleteMessage(ctx, "lab", p.Seq); err != nil || res.Seq == 0 {
			t.Fatal(err)
		}
		_, err := bob.Edit(ctx, "lab", p.Seq, "resurrect")
		wantStatus(t, err, 400, "invalid", "deleted")
	})
}

// The edit window is the server's (--edit-window): edits after it are 403,
// and a window of 0 refuses every edit.
func TestClientAPI_EditWindow(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	s.RoomRep.Freeze(time.UnixMilli(1 << 40))
	serve := func(cfg chat.Config) *client.Client {
		cfg.Hasher = passwordtest.Hasher()
		srv := httptest.NewServer(openapitest.Handler(t, api.New(api.Config{KV: s.KV, Status: &fakeStatus{ready: true}, Accounts: s.Accounts,
			Rooms: chat.NewService(s.RoomRep, cfg)}).Handler()))
		t.Cleanup(srv.Close)
		c := client.New(srv.URL, client.WithHTTPClient(srv.Client()))
		if _, err := c.Login(ctx, "alice", "password of alice"); err != nil {
			t.Fatal(err)
		}
		return c
	}
	s.user(t, "alice")
	windowed := serve(chat.Config{EditWindow: time.Minute})
	if _, err := windowed.CreateRoom(ctx, client.RoomSpec{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	p, _ := windowed.Post(ctx, "r", "x", client.PostOptions{})
	s.RoomRep.Advance(2 * time.Minute)
	_, err := windowed.Edit(ctx, "r", p.Seq, "y")
	wantStatus(t, err, 403, "forbidden", "edit window")
	_, err = serve(chat.Config{EditsOff: true}).Edit(ctx, "r", p.Seq, "y")
	wantStatus(t, err, 403, "forbidden", "disabled")
}
