package chat_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
	"github.com/parley-chat/parley/internal/wire"
)

// The in-memory statetest.Replicator takes any state.Applier: here it runs the
// chat state machine with dedup keys honoured and no Raft underneath.
var _ state.Replicator = (*statetest.Replicator)(nil)

var ctx = context.Background()

func newService(t testing.TB, partitions int) (*chat.Service, *statetest.Replicator) {
	t.Helper()
	r := statetest.NewReplicator(partitions, chat.StateMachine{})
	cfg := chat.Config{MaxText: 64, MaxMembers: 10, Hasher: passwordtest.Hasher()}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return chat.NewService(r, cfg), r
}

func wantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func mustCreate(t testing.TB, s *chat.Service, user string, req chat.CreateRequest) chat.Room {
	t.Helper()
	r, err := s.Create(ctx, user, req, "")
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	return r
}

func mustJoin(t testing.TB, s *chat.Service, user, room, password string) chat.Room {
	t.Helper()
	r, err := s.Join(ctx, user, room, password, "")
	if err != nil {
		t.Fatalf("Join(%s, %s): %v", user, room, err)
	}
	return r
}

func mustPost(t testing.TB, s *chat.Service, user, room, text string, to ...string) chat.PostResult {
	t.Helper()
	p, err := s.Post(ctx, user, room, text, to, "")
	if err != nil {
		t.Fatalf("Post(%s, %s): %v", user, room, err)
	}
	return p
}

func historySeqs(t testing.TB, s *chat.Service, user, room string, q chat.HistoryQuery) []uint64 {
	t.Helper()
	evs, _, err := s.History(ctx, user, room, q, false)
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	out := []uint64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func TestService_Conversation(t *testing.T) {
	s, _ := newService(t, 4)
	room := mustCreate(t, s, "alice", chat.CreateRequest{Name: "General"})
	if room.Name != "general" || room.Owner != "alice" || room.MaxMembers != 10 || room.LastSeq != 1 {
		t.Fatalf("created %+v", room)
	}
	if r := mustJoin(t, s, "bob", "GENERAL", ""); r.Members != 2 || r.LastSeq != 2 {
		t.Fatalf("joined %+v", r)
	}
	mustJoin(t, s, "carol", "general", "")
	p := mustPost(t, s, "bob", "general", "hello")
	if p.Seq != 4 || p.Sender != "bob" || p.Ts == 0 {
		t.Fatalf("post %+v", p)
	}
	w := mustPost(t, s, "alice", "general", "psst", "Bob")
	if w.Seq != 5 {
		t.Fatalf("whisper %+v", w)
	}
	if err := s.Leave(ctx, "carol", "general", ""); err != nil {
		t.Fatal(err)
	}
	evs, staleMs, err := s.History(ctx, "carol", "general", chat.HistoryQuery{}, false)
	if err != nil || staleMs != 0 {
		t.Fatalf("History: %d, %v", staleMs, err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
		if e.Room != "general" {
			t.Fatalf("event %+v names room %q", e, e.Room)
		}
	}
	want := []string{"join", "join", "join", "message", "hidden", "leave"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("carol sees %v, want %v", kinds, want)
	}
	bobs, _, _ := s.History(ctx, "bob", "general", chat.HistoryQuery{After: 4, HasAfter: true, Limit: 1}, false)
	if len(bobs) != 1 || bobs[0].Kind != "whisper" || bobs[0].Text != "psst" || !reflect.DeepEqual(bobs[0].To, []string{"bob"}) {
		t.Fatalf("bob sees %+v", bobs)
	}
	members, _, err := s.Members(ctx, "dave", "general", false)
	if err != nil || len(members) != 2 || members[0].Username != "alice" || members[1].Username != "bob" {
		t.Fatalf("Members = %+v, %v", members, err)
	}
	if n, err := s.MarkRead(ctx, "bob", "general", 100, ""); err != nil || n != 6 {
		t.Fatalf("MarkRead = %d, %v", n, err)
	}
	_, err = s.MarkRead(ctx, "carol", "general", 1, "")
	wantCode(t, err, errs.Forbidden)
	_, err = s.Post(ctx, "carol", "general", "back?", nil, "")
	wantCode(t, err, errs.Forbidden)
	_, err = s.Post(ctx, "bob", "general", "x", []string{"carol"}, "")
	wantCode(t, err, errs.Invalid)
	if !strings.Contains(err.Error(), "to") {
		t.Fatalf("error %q does not name to", err)
	}
}

func TestService_PrivateRooms(t *testing.T) {
	s, _ := newService(t, 2)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "secret", Private: true, Password: "hunter22", MaxMembers: 2})
	cases := []struct {
		name, user, password string
		code                 errs.Code
	}{
		{"no password", "bob", "", errs.Forbidden},
		{"wrong password", "bob", "hunter23", errs.Forbidden},
		{"huge password", "bob", strings.Repeat("x", 10000), errs.Forbidden},
		{"owner again without password", "alice", "", ""},
		{"right password", "bob", "hunter22", ""},
		{"member again", "bob", "", ""},
		{"full", "carol", "hunter22", errs.Conflict},
		{"missing room", "bob", "x", errs.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			room := "secret"
			if tc.code == errs.NotFound {
				room = "nope"
			}
			_, err := s.Join(ctx, tc.user, room, tc.password, "")
			wantCode(t, err, tc.code)
		})
	}
	t.Run("reads", func(t *testing.T) {
		_, _, err := s.History(ctx, "carol", "secret", chat.HistoryQuery{}, false)
		wantCode(t, err, errs.Forbidden)
		_, _, err = s.Members(ctx, "carol", "secret", false)
		wantCode(t, err, errs.Forbidden)
		_, _, err = s.Room(ctx, "carol", "secret", false)
		wantCode(t, err, errs.Forbidden)
		if _, _, err := s.History(ctx, "bob", "secret", chat.HistoryQuery{}, false); err != nil {
			t.Fatal(err)
		}
		if r, _, err := s.Room(ctx, "bob", "Secret", false); err != nil || !r.Private || r.Members != 2 {
			t.Fatalf("Room = %+v, %v", r, err)
		}
	})
}

func TestService_Idempotency(t *testing.T) {
	s, r := newService(t, 1)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	first, err := s.Post(ctx, "alice", "r", "once", nil, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	applied := r.Applied(1)
	retry, err := s.Post(ctx, "alice", "r", "once", nil, "req-1")
	if err != nil || retry != first {
		t.Fatalf("retry = %+v, %v; want the first result %+v", retry, err, first)
	}
	if r.Applied(1) != applied {
		t.Fatal("the retry was applied")
	}
	// Usernames are case-insensitive, so is the dedup key's user.
	if retry, _ := s.Post(ctx, "ALICE", "r", "once", nil, "req-1"); retry != first {
		t.Fatalf("retry as ALICE = %+v, want %+v", retry, first)
	}
	other, _ := s.Post(ctx, "bob", "r", "mine", nil, "req-1")
	if other.Seq != first.Seq+1 {
		t.Fatalf("another user's post with the same key = %+v", other)
	}
	if p := mustPost(t, s, "alice", "r", "again"); p.Seq != first.Seq+2 {
		t.Fatalf("post without key = %+v", p)
	}
	evs, _, _ := s.History(ctx, "alice", "r", chat.HistoryQuery{}, false)
	if n := len(evs); n != 5 {
		t.Fatalf("%d events, want 5 (two joins, three posts)", n)
	}
	t.Run("create", func(t *testing.T) {
		a, err := s.Create(ctx, "alice", chat.CreateRequest{Name: "x"}, "c-1")
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Create(ctx, "alice", chat.CreateRequest{Name: "x"}, "c-1")
		if err != nil || b != a {
			t.Fatalf("retried create = %+v, %v; want %+v", b, err, a)
		}
		_, err = s.Create(ctx, "alice", chat.CreateRequest{Name: "x"}, "c-2")
		wantCode(t, err, errs.Conflict)
	})
	t.Run("key reused for another request", func(t *testing.T) {
		_, err := s.MarkRead(ctx, "alice", "r", 1, "req-1")
		wantCode(t, err, errs.Conflict)
		wantCode(t, s.Leave(ctx, "alice", "r", "req-1"), errs.Conflict)
		if !strings.Contains(fmt.Sprint(s.Leave(ctx, "alice", "r", "req-1")), "idempotency key") {
			t.Fatal("the error does not name the idempotency key")
		}
	})
	if chat.DedupKey("alice", "") != "" || chat.DedupKey("ab", "c") == chat.DedupKey("a", "bc") {
		t.Fatal("DedupKey")
	}
}

func TestService_Validation(t *testing.T) {
	s, r := newService(t, 2)
	long := strings.Repeat("t", 65)
	cases := []struct {
		name string
		call func() error
		code errs.Code
		word string // the field the message must name
	}{
		{"no user", func() error { _, err := s.Post(ctx, "", "r", "x", nil, ""); return err }, errs.Unauthorized, "sign in"},
		{"bad user", func() error { _, _, err := s.List(ctx, "a b", false); return err }, errs.Invalid, "username"},
		{"bad room", func() error { _, err := s.Join(ctx, "bob", "a/b", "", ""); return err }, errs.Invalid, "room name"},
		{"dot room", func() error { return s.Leave(ctx, "bob", "..", "") }, errs.Invalid, "room name"},
		{"long room", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: strings.Repeat("r", 65)}, "")
			return err
		}, errs.Invalid, "room name"},
		{"empty text", func() error { _, err := s.Post(ctx, "bob", "r", "", nil, ""); return err }, errs.Invalid, "text"},
		{"long text", func() error { _, err := s.Post(ctx, "bob", "r", long, nil, ""); return err }, errs.TooLarge, "text"},
		{"bad utf8", func() error { _, err := s.Post(ctx, "bob", "r", "\xff", nil, ""); return err }, errs.Invalid, "text"},
		{"bad to", func() error { _, err := s.Post(ctx, "bob", "r", "x", []string{"a,b"}, ""); return err }, errs.Invalid, "to"},
		{"escape in text", func() error { _, err := s.Post(ctx, "bob", "r", "\x1b[2J\x1b[Hfake", nil, ""); return err },
			errs.Invalid, "text: control character U+001B not allowed"},
		{"carriage return in text", func() error { _, err := s.Post(ctx, "bob", "r", "a\rb", nil, ""); return err },
			errs.Invalid, "text: control character U+000D not allowed"},
		{"C1 in text", func() error { _, err := s.Post(ctx, "bob", "r", "a\u009b2J", nil, ""); return err },
			errs.Invalid, "text: control character U+009B not allowed"},
		{"override in text", func() error { _, err := s.Post(ctx, "bob", "r", "abc\u202edef", nil, ""); return err },
			errs.Invalid, "text: bidirectional formatting character U+202E not allowed"},
		{"blank text", func() error { _, err := s.Post(ctx, "bob", "r", " \n\t ", nil, ""); return err }, errs.Invalid, "text is blank"},
		{"escape in to", func() error { _, err := s.Post(ctx, "bob", "r", "x", []string{"a\x1b"}, ""); return err },
			errs.Invalid, "to: control character U+001B not allowed"},
		{"escape in room", func() error { _, err := s.Join(ctx, "bob", "r\x1b]0;t\x07", "", ""); return err },
			errs.Invalid, "room name: control character U+001B not allowed"},
		{"isolate in room", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: "r\u2066"}, "")
			return err
		}, errs.Invalid, "room name: bidirectional formatting character U+2066 not allowed"},
		{"many to", func() error {
			_, err := s.Post(ctx, "bob", "r", "x", strings.Split(strings.Repeat("u,", 11)+"u", ","), "")
			return err
		}, errs.Invalid, "to: 12 recipients; the limit is 10"},
		{"long idempotency key", func() error {
			_, err := s.Post(ctx, "bob", "r", "x", nil, strings.Repeat("i", wire.MaxIdempotencyKey+1))
			return err
		}, errs.Invalid, "idempotency key"},
		{"members over cap", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: "r", MaxMembers: 11}, "")
			return err
		}, errs.Invalid, "max_members"},
		{"negative members", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: "r", MaxMembers: -1}, "")
			return err
		}, errs.Invalid, "max_members"},
		{"private without password", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: "r", Private: true}, "")
			return err
		}, errs.Invalid, "password"},
		{"short password", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: "r", Private: true, Password: "1234567"}, "")
			return err
		}, errs.Invalid, "password"},
		{"long password", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: "r", Private: true, Password: strings.Repeat("p", 257)}, "")
			return err
		}, errs.TooLarge, "password"},
		{"public with password", func() error {
			_, err := s.Create(ctx, "bob", chat.CreateRequest{Name: "r", Password: "12345678"}, "")
			return err
		}, errs.Invalid, "password"},
		{"history limit", func() error {
			_, _, err := s.History(ctx, "bob", "r", chat.HistoryQuery{Limit: 501}, false)
			return err
		}, errs.Invalid, "limit"},
		{"negative retention", func() error { _, err := s.Compact(ctx, 1, -time.Second, 0); return err }, errs.Invalid, "retention"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.word) {
				t.Fatalf("error %q does not name %q", err, tc.word)
			}
		})
	}
	if r.Applied(1)+r.Applied(2) != 0 {
		t.Fatal("an invalid call was proposed")
	}
}

// Multi-line messages keep their newlines and tabs, and right-to-left text
// its marks: only what a terminal acts on is refused.
func TestService_PostText(t *testing.T) {
	s, _ := newService(t, 2)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	for _, text := range []string{"line one\n\tline two", "שלום\u200f!", "  padded  "} {
		p := mustPost(t, s, "alice", "r", text)
		evs, _, err := s.History(ctx, "alice", "r", chat.HistoryQuery{After: p.Seq - 1, Limit: 1}, false)
		if err != nil || len(evs) != 1 || evs[0].Text != text {
			t.Errorf("history after posting %q: %+v, %v", text, evs, err)
		}
	}
}

func TestService_List(t *testing.T) {
	s, r := newService(t, 5)
	var public []string
	for i := range 20 {
		name := fmt.Sprintf("room%02d", i)
		public = append(public, name)
		mustCreate(t, s, "alice", chat.CreateRequest{Name: name})
	}
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "hidden", Private: true, Password: "password"})
	used := map[uint64]bool{}
	for _, n := range public {
		used[r.PartitionOf(n)] = true
	}
	if len(used) < 3 {
		t.Fatalf("rooms landed in only %d partitions", len(used))
	}
	mustJoin(t, s, "bob", "room03", "")
	mustPost(t, s, "alice", "room03", "hi")
	names := func(user string) ([]string, []chat.RoomSummary) {
		rooms, staleMs, err := s.List(ctx, user, false)
		if err != nil || staleMs != 0 {
			t.Fatalf("List: %d, %v", staleMs, err)
		}
		var out []string
		for _, r := range rooms {
			out = append(out, r.Name)
		}
		return out, rooms
	}
	if got, _ := names("bob"); !reflect.DeepEqual(got, public) {
		t.Fatalf("bob sees %q, want %q", got, public)
	}
	got, rooms := names("alice")
	if want := append([]string{"hidden"}, public...); !reflect.DeepEqual(got, want) {
		t.Fatalf("alice sees %q, want %q", got, want)
	}
	for _, rs := range rooms {
		if rs.Name == "room03" && (rs.LastSeq != 3 || rs.LastRead != 3 || rs.Members != 2 || !rs.Member) {
			t.Fatalf("room03 for alice: %+v", rs)
		}
	}
	_, bobs := names("bob")
	if rs := bobs[3]; rs.Name != "room03" || rs.LastRead != 2 || !rs.Member || bobs[0].Member {
		t.Fatalf("bob's rooms: %+v %+v", bobs[3], bobs[0])
	}
	r.StaleMs = 7
	if _, staleMs, err := s.List(ctx, "bob", true); err != nil || staleMs != 7 {
		t.Fatalf("stale List: %d, %v", staleMs, err)
	}
}

func TestService_Delete(t *testing.T) {
	s, _ := newService(t, 3)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	mustJoin(t, s, "bob", "r", "")
	mustPost(t, s, "bob", "r", "hello")
	wantCode(t, s.Delete(ctx, "bob", "r", false, ""), errs.Forbidden)
	if err := s.Delete(ctx, "root", "r", true, ""); err != nil {
		t.Fatalf("admin delete: %v", err)
	}
	wantCode(t, s.Delete(ctx, "alice", "r", false, ""), errs.NotFound)
	_, _, err := s.History(ctx, "alice", "r", chat.HistoryQuery{}, false)
	wantCode(t, err, errs.NotFound)
	_, err = s.Post(ctx, "bob", "r", "x", nil, "")
	wantCode(t, err, errs.NotFound)
	room := mustCreate(t, s, "bob", chat.CreateRequest{Name: "R"})
	if room.LastSeq != 4 || room.FirstRetainedSeq != 4 || room.Owner != "bob" {
		t.Fatalf("recreated %+v", room)
	}
	if got := historySeqs(t, s, "bob", "r", chat.HistoryQuery{}); !reflect.DeepEqual(got, []uint64{4}) {
		t.Fatalf("history of the new room %v", got)
	}
}

func TestService_Compact(t *testing.T) {
	s, r := newService(t, 1)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"}) // t=1
	for range 9 {
		mustPost(t, s, "alice", "r", "x") // t=2..10
	}
	// statetest stamps the next proposal t=11: keep 5 ms, so t<6 goes (seqs 1-5).
	res, err := s.Compact(ctx, r.PartitionOf("r"), 5*time.Millisecond, 0)
	if err != nil || res.Deleted != 5 || res.More {
		t.Fatalf("Compact = %+v, %v", res, err)
	}
	_, _, err = s.History(ctx, "alice", "r", chat.HistoryQuery{After: 2, HasAfter: true}, false)
	if !errors.Is(err, chat.ErrHistoryCompacted) || errs.CodeOf(err) != chat.CodeHistoryCompacted {
		t.Fatalf("History after a compacted seq: %v", err)
	}
	if got := historySeqs(t, s, "alice", "r", chat.HistoryQuery{After: 5, HasAfter: true}); !reflect.DeepEqual(got, []uint64{6, 7, 8, 9, 10}) {
		t.Fatalf("history after 5: %v", got)
	}
}

func TestService_ReplicatorErrors(t *testing.T) {
	s, r := newService(t, 3)
	mustCreate(t, s, "alice", chat.CreateRequest{Name: "r"})
	r.SetErr(errs.New(errs.Unavailable, "no leader"))
	_, err := s.Post(ctx, "alice", "r", "x", nil, "")
	wantCode(t, err, errs.Unavailable)
	_, err = s.Join(ctx, "bob", "r", "", "")
	wantCode(t, err, errs.Unavailable)
	_, _, err = s.History(ctx, "alice", "r", chat.HistoryQuery{}, false)
	wantCode(t, err, errs.Unavailable)
	_, _, err = s.List(ctx, "alice", false)
	wantCode(t, err, errs.Unavailable)
	var e *errs.Error
	if !errors.As(err, &e) || !e.Retryable {
		t.Fatalf("List error %v lost its retryable *errs.Error", err)
	}
	r.SetErr(nil)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Post(cctx, "alice", "r", "x", nil, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Post: %v", err)
	}
}

// TestService_Concurrent posts from many goroutines into a few rooms: every
// room's seqs come out gap-free and every post got its own.
func TestService_Concurrent(t *testing.T) {
	s, _ := newService(t, 4)
	rooms := []string{"a", "b", "c"}
	for _, room := range rooms {
		mustCreate(t, s, "alice", chat.CreateRequest{Name: room})
		for i := range 8 {
			mustJoin(t, s, fmt.Sprintf("u%d", i), room, "")
		}
	}
	var mu sync.Mutex
	got := map[string]map[uint64]bool{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 30 {
				room := rooms[j%len(rooms)]
				p, err := s.Post(ctx, fmt.Sprintf("u%d", i), room, "x", nil, fmt.Sprint(j))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if got[room] == nil {
					got[room] = map[uint64]bool{}
				}
				if got[room][p.Seq] {
					t.Errorf("seq %d of %s given twice", p.Seq, room)
				}
				got[room][p.Seq] = true
				mu.Unlock()
				if _, _, err := s.List(ctx, "u0", j%2 == 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, room := range rooms {
		seqs := historySeqs(t, s, "alice", room, chat.HistoryQuery{Limit: 500})
		if len(seqs) != 9+80 || seqs[len(seqs)-1] != 89 {
			t.Fatalf("room %s: %d events ending at %d, want 89", room, len(seqs), seqs[len(seqs)-1])
		}
	}
}

func BenchmarkService_Post(b *testing.B) {
	s, _ := newService(b, 16)
	mustCreate(b, s, "alice", chat.CreateRequest{Name: "general"})
	text := strings.Repeat("x", 60)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Post(ctx, "alice", "general", text, nil, ""); err != nil {
			b.Fatal(err)
		}
	}
}

func TestConfig(t *testing.T) {
	d := chat.DefaultConfig()
	if d.MaxText != 4096 || d.RoomMembers != 30 || d.MaxMembers != 1000 || d.MinPassword != 8 || d.MaxPassword != 256 ||
		d.Hasher != nil {
		t.Fatalf("DefaultConfig = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]chat.Config{
		"room over cap":      {RoomMembers: 50, MaxMembers: 40},
		"passwords inverted": {MinPassword: 20, MaxPassword: 10},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate(%+v) = nil", name, c)
		}
	}
}
