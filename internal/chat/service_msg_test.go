package chat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

func mustMessage(t *testing.T, s *chat.Service, user, room string, seq uint64) chat.Event {
	t.Helper()
	e, _, err := s.Message(ctx, user, room, seq, false)
	if err != nil {
		t.Fatalf("Message(%s, %d): %v", room, seq, err)
	}
	return e
}

// history returns the whole retained history of room as user sees it.
func history(t *testing.T, s *chat.Service, user, room string) []chat.Event {
	t.Helper()
	evs, _, err := s.History(ctx, user, room, chat.HistoryQuery{After: 0, HasAfter: true, Limit: chat.MaxHistoryLimit}, false)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	return evs
}

func TestService_Edit(t *testing.T) {
	s, r := newService(t, 2)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	p := mustPost(t, s, "alice", "r", "helo")
	res, err := s.Edit(ctx, "alice", "r", p.Seq, "hello", "e1")
	if err != nil || res.Seq != p.Seq+1 {
		t.Fatalf("Edit = %+v, %v", res, err)
	}
	if again, err := s.Edit(ctx, "alice", "r", p.Seq, "hello", "e1"); err != nil || again != res {
		t.Fatalf("retried Edit = %+v, %v; want %+v", again, err, res)
	}
	m := mustMessage(t, s, "bob", "r", p.Seq)
	if m.Text != "hello" || m.EditedAt != res.Ts {
		t.Fatalf("edited message %+v", m)
	}
	ev := mustMessage(t, s, "bob", "r", res.Seq)
	if ev.Kind != chat.KindEdit || ev.Target != p.Seq || ev.Message == nil || ev.Message.Text != "hello" {
		t.Fatalf("edit event %+v", ev)
	}
	before := r.Keys(r.PartitionOf("r"))
	for _, tc := range []struct {
		name, user string
		seq        uint64
		text       string
		code       errs.Code
	}{
		{"not the author", "bob", p.Seq, "mine now", errs.Forbidden},
		{"unknown seq", "alice", 99, "x", errs.NotFound},
		{"a join", "alice", 1, "x", errs.NotFound},
		{"blank", "alice", p.Seq, "  ", errs.Invalid},
		{"not a member", "carol", p.Seq, "x", errs.Forbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Edit(ctx, tc.user, "r", tc.seq, tc.text, "")
			wantCode(t, err, tc.code)
		})
	}
	if after := r.Keys(r.PartitionOf("r")); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("refused edits changed the state")
	}
}

func TestService_EditWindow(t *testing.T) {
	r := statetest.NewReplicator(1, chat.StateMachine{})
	r.Freeze(time.UnixMilli(1_000_000))
	s := chat.NewService(r, chat.Config{EditWindow: time.Minute, Hasher: passwordtest.Hasher()})
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	p := mustPost(t, s, "alice", "r", "x")
	r.Advance(30 * time.Second)
	if _, err := s.Edit(ctx, "alice", "r", p.Seq, "y", ""); err != nil {
		t.Fatalf("edit within the window: %v", err)
	}
	r.Advance(31 * time.Second)
	_, err := s.Edit(ctx, "alice", "r", p.Seq, "z", "")
	wantCode(t, err, errs.Forbidden)
	if !strings.Contains(err.Error(), "edit window") {
		t.Fatalf("error %v does not name the edit window", err)
	}
	off := chat.NewService(r, chat.Config{EditsOff: true, Hasher: passwordtest.Hasher()})
	_, err = off.Edit(ctx, "alice", "r", p.Seq, "z", "")
	wantCode(t, err, errs.Forbidden)
}

func TestService_DeleteMessage(t *testing.T) {
	s, r := newService(t, 1)
	mustCreate(t, s, "owner", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "alice", "r", "")
	mustJoin(t, s, "bob", "r", "")
	secret := "the launch code is 0000"
	p := mustPost(t, s, "alice", "r", secret+" @bob")
	if _, err := s.Edit(ctx, "alice", "r", p.Seq, secret+" edited @bob", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.React(ctx, "bob", "r", p.Seq, "👍", false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pin(ctx, "bob", "r", p.Seq, false, ""); err != nil {
		t.Fatal(err)
	}
	_, err := s.DeleteMessage(ctx, "bob", "r", p.Seq, false, "")
	wantCode(t, err, errs.Forbidden)
	res, err := s.DeleteMessage(ctx, "owner", "r", p.Seq, false, "")
	if err != nil || res.Seq == 0 {
		t.Fatalf("owner's delete = %+v, %v", res, err)
	}
	if again, err := s.DeleteMessage(ctx, "alice", "r", p.Seq, false, ""); err != nil || again.Seq != 0 {
		t.Fatalf("deleting again = %+v, %v; want no change", again, err)
	}
	m := mustMessage(t, s, "bob", "r", p.Seq)
	if !m.Deleted || m.Text != "" || m.Reactions != nil || m.Pinned || m.Sender != "alice" {
		t.Fatalf("tombstone %+v", m)
	}
	// The text is gone from the state, not hidden.
	_, err = r.Read(ctx, r.PartitionOf("r"), false, func(rd state.Reader) error {
		return rd.Scan(nil, nil, func(k, v []byte) bool {
			if strings.Contains(string(v), "launch code") || strings.Contains(string(k), "launch code") {
				t.Errorf("deleted text still stored under %q", k)
			}
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	pins, _, _ := s.Pins(ctx, "bob", "r", false)
	page, _, _ := s.Mentions(ctx, "bob", "", 0, false)
	if len(pins) != 0 || len(page.Mentions) != 0 {
		t.Fatalf("a deleted message is still pinned (%v) or mentions bob (%v)", pins, page.Mentions)
	}
	_, err = s.React(ctx, "bob", "r", p.Seq, "👍", false, "")
	wantCode(t, err, errs.Invalid)
	_, err = s.Edit(ctx, "alice", "r", p.Seq, "back", "")
	wantCode(t, err, errs.Invalid)
}

func TestService_React(t *testing.T) {
	s := chat.NewService(statetest.NewReplicator(1, chat.StateMachine{}), chat.Config{Hasher: passwordtest.Hasher()})
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	for i := range 12 {
		mustJoin(t, s, "u"+string(rune('a'+i)), "r", "")
	}
	p := mustPost(t, s, "alice", "r", "vote")
	for i := range 12 {
		if _, err := s.React(ctx, "u"+string(rune('a'+i)), "r", p.Seq, ":thumbsup:", false, ""); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.React(ctx, "ua", "r", p.Seq, ":thumbsup:", false, ""); err != nil || res.Seq != 0 {
		t.Fatalf("second identical reaction = %+v, %v", res, err)
	}
	m := mustMessage(t, s, "alice", "r", p.Seq)
	if len(m.Reactions) != 1 || m.Reactions[0].Count != 12 || len(m.Reactions[0].Users) != chat.MaxReactionUsers {
		t.Fatalf("reactions %+v", m.Reactions)
	}
	if _, err := s.React(ctx, "ua", "r", p.Seq, ":thumbsup:", true, ""); err != nil {
		t.Fatal(err)
	}
	if m = mustMessage(t, s, "alice", "r", p.Seq); m.Reactions[0].Count != 11 {
		t.Fatalf("after unreact %+v", m.Reactions)
	}
	for _, bad := range []string{"", "thumbsup", ":Thumbs Up:", "a", "👍x", "<b>", ":" + strings.Repeat("a", 33) + ":", "\u202e"} {
		_, err := s.React(ctx, "ua", "r", p.Seq, bad, false, "")
		wantCode(t, err, errs.Invalid)
	}
	for _, good := range []string{"👍🏽", "❤️", "👨‍👩‍👧", "1️⃣", ":+1:"} {
		if err := chat.CheckEmoji(good); err != nil {
			t.Errorf("CheckEmoji(%q) = %v", good, err)
		}
	}
	_, err := s.React(ctx, "zed", "r", p.Seq, "👍", false, "")
	wantCode(t, err, errs.Forbidden)
	_, err = s.React(ctx, "ua", "r", 1000, "👍", false, "")
	wantCode(t, err, errs.NotFound)
}

func TestService_Threads(t *testing.T) {
	s, _ := newService(t, 1)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	root := mustPost(t, s, "alice", "r", "question")
	r1, err := s.PostReply(ctx, "bob", "r", "answer 1", nil, root.Seq, "")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s.PostReply(ctx, "alice", "r", "answer 2", nil, r1.Seq, "") // a reply to a reply joins the thread
	if err != nil {
		t.Fatal(err)
	}
	m := mustMessage(t, s, "bob", "r", root.Seq)
	if m.ReplyCount != 2 || m.LastReplyAt != r2.Ts {
		t.Fatalf("root %+v", m)
	}
	page, _, err := s.Thread(ctx, "bob", "r", root.Seq, 0, 0, false)
	if err != nil || len(page.Replies) != 2 || page.Replies[1].ReplyTo != root.Seq || page.Root.Seq != root.Seq {
		t.Fatalf("Thread = %+v, %v", page, err)
	}
	page, _, _ = s.Thread(ctx, "bob", "r", root.Seq, r1.Seq, 0, false)
	if len(page.Replies) != 1 || page.Replies[0].Seq != r2.Seq {
		t.Fatalf("Thread after %d = %+v", r1.Seq, page.Replies)
	}
	_, err = s.PostReply(ctx, "bob", "r", "x", nil, 99, "")
	wantCode(t, err, errs.NotFound)
	_, err = s.PostReply(ctx, "bob", "r", "x", nil, 1, "") // the join
	wantCode(t, err, errs.NotFound)
	_, _, err = s.Thread(ctx, "bob", "r", r1.Seq, 0, 0, false)
	wantCode(t, err, errs.Invalid)
}

func TestService_Mentions(t *testing.T) {
	s, _ := newService(t, 3)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "a"})
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "b"})
	for _, room := range []string{"a", "b"} {
		mustJoin(t, s, "bob", room, "")
		mustJoin(t, s, "carol", room, "")
	}
	mustPost(t, s, "alice", "a", "hi @Bob and @nobody")
	mustPost(t, s, "alice", "b", "@room meeting")
	mustPost(t, s, "alice", "b", "`@bob` in code is not a mention")
	mustPost(t, s, "carol", "b", "@room I said")
	rooms, _, err := s.List(ctx, "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	if rooms[0].UnreadMentions != 1 || rooms[1].UnreadMentions != 2 {
		t.Fatalf("unread_mentions %+v", rooms)
	}
	page, _, err := s.Mentions(ctx, "bob", "", 0, false)
	if err != nil || len(page.Mentions) != 3 || page.Next == "" {
		t.Fatalf("Mentions = %+v, %v", page, err)
	}
	next, _, _ := s.Mentions(ctx, "bob", page.Next, 0, false)
	if len(next.Mentions) != 0 {
		t.Fatalf("after the last: %+v", next)
	}
	first, _, _ := s.Mentions(ctx, "bob", "", 1, false)
	if len(first.Mentions) != 1 || first.Mentions[0].Room != "b" {
		t.Fatalf("latest 1 = %+v", first)
	}
	if _, err := s.MarkRead(ctx, "bob", "a", 100, ""); err != nil {
		t.Fatal(err)
	}
	rooms, _, _ = s.List(ctx, "bob", false)
	if rooms[0].UnreadMentions != 0 || rooms[1].UnreadMentions != 2 {
		t.Fatalf("after reading a: %+v", rooms)
	}
	carol, _, _ := s.Mentions(ctx, "carol", "", 0, false)
	if len(carol.Mentions) != 1 { // alice's @room, not carol's own
		t.Fatalf("carol's mentions %+v", carol.Mentions)
	}
	_, _, err = s.Mentions(ctx, "bob", "garbage", 0, false)
	wantCode(t, err, errs.Invalid)
}

func TestService_Pins(t *testing.T) {
	s, _ := newService(t, 1)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	p := mustPost(t, s, "alice", "r", "rules")
	w := mustPost(t, s, "alice", "r", "psst", "bob")
	if res, err := s.Pin(ctx, "bob", "r", p.Seq, false, ""); err != nil || res.Seq == 0 {
		t.Fatalf("Pin = %+v, %v", res, err)
	}
	if res, _ := s.Pin(ctx, "bob", "r", p.Seq, false, ""); res.Seq != 0 {
		t.Fatalf("pinning twice appended %d", res.Seq)
	}
	pins, _, err := s.Pins(ctx, "carol", "r", false)
	if err != nil || len(pins) != 1 || !pins[0].Pinned {
		t.Fatalf("Pins = %+v, %v", pins, err)
	}
	_, err = s.Pin(ctx, "bob", "r", w.Seq, false, "")
	wantCode(t, err, errs.Invalid)
	_, err = s.Pin(ctx, "carol", "r", p.Seq, false, "")
	wantCode(t, err, errs.Forbidden)
	if _, err := s.Pin(ctx, "alice", "r", p.Seq, true, ""); err != nil {
		t.Fatal(err)
	}
	if pins, _, _ = s.Pins(ctx, "bob", "r", false); len(pins) != 0 {
		t.Fatalf("after unpin %+v", pins)
	}
}

// Changes to a whisper are hidden from those outside it, like the whisper.
func TestService_WhisperChangesHidden(t *testing.T) {
	s, _ := newService(t, 1)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	mustJoin(t, s, "carol", "r", "")
	w := mustPost(t, s, "alice", "r", "psst", "bob")
	if _, err := s.React(ctx, "bob", "r", w.Seq, "👍", false, ""); err != nil {
		t.Fatal(err)
	}
	_, err := s.React(ctx, "carol", "r", w.Seq, "👍", false, "")
	wantCode(t, err, errs.NotFound)
	for _, e := range history(t, s, "carol", "r")[3:] {
		if e.Kind != chat.KindHidden || e.Text != "" || e.Message != nil {
			t.Fatalf("carol sees %+v", e)
		}
	}
	evs := history(t, s, "bob", "r")
	if last := evs[len(evs)-1]; last.Kind != chat.KindReact || last.Message == nil || last.Message.Text != "psst" {
		t.Fatalf("bob sees %+v", last)
	}
}

func TestParseMentions(t *testing.T) {
	for _, tc := range []struct {
		text       string
		users      []string
		room, here bool
	}{
		{"hi @bob", []string{"bob"}, false, false},
		{"@Bob, @bob and @carol.", []string{"Bob", "carol"}, false, false},
		{"mail me at me@example.com", nil, false, false},
		{"@room @here", nil, true, true},
		{"`@bob` and ```@carol```", nil, false, false},
		{"@" + strings.Repeat("a", 33), nil, false, false},
		{"(@dave)", []string{"dave"}, false, false},
	} {
		m := chat.ParseMentions(tc.text)
		if strings.Join(m.Users, ",") != strings.Join(tc.users, ",") || m.Room != tc.room || m.Here != tc.here {
			t.Errorf("ParseMentions(%q) = %+v", tc.text, m)
		}
	}
}
