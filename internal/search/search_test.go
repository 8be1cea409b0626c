package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
)

var ctx = context.Background()

// corpus seeds rooms (public and private), members, messages, whispers,
// edits, deletes, a deleted room and a room whose retention removed its
// oldest messages, and returns the rooms and users.
func (w *world) corpus(seed uint64, posts int) (rooms, users []string) {
	t := w.t
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	users = []string{"ann", "bob", "cat", "dan", "eve"}
	rooms = []string{"general", "random", "ops", "secret", "doomed", "short"}
	private := map[string]bool{"ops": true, "secret": true}
	members := map[string][]string{}
	for i, room := range rooms {
		owner := users[i%len(users)]
		must(w.s.Create(ctx, owner, chat.CreateRequest{Name: room, Private: private[room], Password: pw(private[room])}, ""))(t)
		members[room] = []string{owner}
		for _, u := range users {
			if u != owner && rng.IntN(3) > 0 {
				must(w.s.Join(ctx, u, room, pw(private[room]), ""))(t)
				members[room] = append(members[room], u)
			}
		}
	}
	var posted []struct {
		room, user string
		seq        uint64
	}
	for range posts {
		room := rooms[rng.IntN(len(rooms))]
		ms := members[room]
		user := ms[rng.IntN(len(ms))]
		var to []string
		if rng.IntN(6) == 0 && len(ms) > 1 {
			for _, m := range ms {
				if m != user && len(to) < 2 && rng.IntN(2) == 0 {
					to = append(to, m)
				}
			}
		}
		res := must(w.s.Post(ctx, user, room, randomText(rng), to, ""))(t)
		posted = append(posted, struct {
			room, user string
			seq        uint64
		}{room, user, res.Seq})
		if rng.IntN(8) == 0 {
			w.syncIndexes() // index some along the way, as indexers do
		}
	}
	for _, p := range posted {
		switch rng.IntN(10) {
		case 0:
			must(w.s.Edit(ctx, p.user, p.room, p.seq, randomText(rng), ""))(t)
		case 1:
			must(w.s.DeleteMessage(ctx, p.user, p.room, p.seq, false, ""))(t)
		}
	}
	if err := w.s.Delete(ctx, users[4%len(users)], "doomed", false, ""); err != nil {
		t.Fatal(err)
	}
	keep := int64(5)
	must(w.s.UpdateSettings(ctx, users[5%len(users)], "short", chat.SettingsRequest{RetentionMessages: &keep}, false, ""))(t)
	for more := true; more; {
		res := must(w.s.Compact(ctx, w.r.PartitionOf("short"), 0, 0))(t)
		more = res.More
	}
	return rooms, users
}

func pw(private bool) string {
	if private {
		return "password1"
	}
	return ""
}

// randomSpec draws a query over the corpus.
func randomSpec(rng *rand.Rand, rooms, users []string, from, to int64) Request {
	word := func() string { return vocabulary[rng.IntN(len(vocabulary))] }
	var parts []string
	switch rng.IntN(5) {
	case 0:
		parts = append(parts, word())
	case 1:
		parts = append(parts, word(), strings.ToUpper(word()))
	case 2:
		parts = append(parts, `"`+word()+" "+word()+`"`)
	case 3:
		parts = append(parts, word(), "from:"+users[rng.IntN(len(users))])
	case 4:
		parts = append(parts, "in:"+rooms[rng.IntN(len(rooms))])
	}
	req := Request{Q: strings.Join(parts, " "), Limit: MaxLimit}
	if rng.IntN(4) == 0 {
		req.After = fmt.Sprint(from + rng.Int64N(max(to-from, 1)))
	}
	if rng.IntN(4) == 0 {
		req.Before = fmt.Sprint(from + rng.Int64N(max(to-from, 1)))
	}
	return req
}

// Every search returns exactly the messages a brute-force scan of the
// history each user may read finds (all of them when they fit the limit,
// else the limit's worth, best first), never a whisper to others, a message
// of a private room the user is not in, a deleted message, a message of a
// deleted room or one removed by retention.
func TestSearch_MatchesBruteForce(t *testing.T) {
	w := newWorld(t, 3)
	start := time.Now().UnixMilli()
	rooms, users := w.corpus(1, 400)
	end := time.Now().UnixMilli() + 1
	w.syncIndexes()
	rng := rand.New(rand.NewPCG(7, 7))
	checked := 0
	for i := range 300 {
		req := randomSpec(rng, rooms, users, start, end)
		user := users[i%len(users)]
		spec, err := ParseRequest(req)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		page, err := w.se.Search(ctx, user, req)
		if err != nil {
			t.Fatalf("search %+v: %v", req, err)
		}
		want := w.bruteForce(user, rooms, spec)
		got := refs(page.Results)
		if len(want) <= MaxLimit {
			if !slices.Equal(got, want) {
				t.Fatalf("search %+v as %s:\n got %v\nwant %v", req, user, got, want)
			}
		} else if len(got) != MaxLimit || !subset(got, want) {
			t.Fatalf("search %+v as %s: %d results, not %d of the %d expected", req, user, len(got), MaxLimit, len(want))
		}
		for j := 1; j < len(page.Results); j++ {
			if page.Results[j].Score > page.Results[j-1].Score {
				t.Fatalf("results not ranked: %v", page.Results)
			}
		}
		checked += len(want)
	}
	if checked < 300 {
		t.Fatalf("only %d expected hits over 300 queries: the corpus is too sparse to test anything", checked)
	}
}

func subset(a, b []string) bool {
	for _, v := range a {
		if _, ok := slices.BinarySearch(b, v); !ok {
			return false
		}
	}
	return true
}

// Whispers are found only by their sender and recipients; a private room's
// messages only by its members; highlights mark the words found.
func TestSearch_Permissions(t *testing.T) {
	w := newWorld(t, 2)
	must(w.s.Create(ctx, "ann", chat.CreateRequest{Name: "lobby"}, ""))(t)
	must(w.s.Create(ctx, "ann", chat.CreateRequest{Name: "vault", Private: true, Password: "password1"}, ""))(t)
	for _, u := range []string{"bob", "cat"} {
		must(w.s.Join(ctx, u, "lobby", "", ""))(t)
	}
	must(w.s.Join(ctx, "bob", "vault", "password1", ""))(t)
	must(w.s.Post(ctx, "ann", "lobby", "the zebra plan <b>now</b>", []string{"Bob"}, ""))(t)
	must(w.s.Post(ctx, "bob", "vault", "zebra in the vault", nil, ""))(t)
	must(w.s.Post(ctx, "cat", "lobby", "no stripes here", nil, ""))(t)
	w.syncIndexes()
	cases := []struct {
		user string
		want []string
	}{
		{"ann", []string{"lobby/4", "vault/3"}},
		{"bob", []string{"lobby/4", "vault/3"}},
		{"cat", nil},
		{"dan", nil},
	}
	for _, c := range cases {
		t.Run(c.user, func(t *testing.T) {
			got := refs(w.search(c.user, "ZEBRA"))
			if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	res := w.search("bob", `"zebra plan" from:@Ann in:#Lobby`)
	if len(res) != 1 || res[0].Message.Kind != chat.KindWhisper || len(res[0].Highlights) == 0 ||
		!strings.Contains(res[0].Highlights[0], "<mark>zebra</mark> <mark>plan</mark> &lt;b&gt;now") {
		t.Fatalf("whisper hit = %+v", res)
	}
}

// An edit re-indexes the message's new text, a delete removes it; the
// indexer learns of both from the apply notifier's touch of the room.
func TestSearch_EditsAndDeletes(t *testing.T) {
	w := newWorld(t, 1)
	must(w.s.Create(ctx, "ann", chat.CreateRequest{Name: "lobby"}, ""))(t)
	a := must(w.s.Post(ctx, "ann", "lobby", "first draft", nil, ""))(t)
	b := must(w.s.Post(ctx, "ann", "lobby", "another draft", nil, ""))(t)
	w.syncIndexes()
	if got := refs(w.search("bob", "draft")); len(got) != 2 {
		t.Fatalf("before: %v", got)
	}
	must(w.s.Edit(ctx, "ann", "lobby", a.Seq, "final text", ""))(t)
	must(w.s.DeleteMessage(ctx, "ann", "lobby", b.Seq, false, ""))(t)
	rp := w.x.replicas[1]
	rp.touched("lobby")
	<-rp.wake
	if err := rp.syncDirty(ctx); err != nil {
		t.Fatal(err)
	}
	if got := refs(w.search("bob", "draft")); len(got) != 0 {
		t.Fatalf("draft after edit and delete: %v", got)
	}
	if got := refs(w.search("bob", "final")); !slices.Equal(got, []string{fmt.Sprintf("lobby/%d", a.Seq)}) {
		t.Fatalf("final: %v", got)
	}
	if n := must(rp.idx.Count())(t); n != 1 {
		t.Fatalf("index holds %d messages, want 1", n)
	}
}

// Messages removed by retention (issue 11) and the messages of a deleted
// room leave the index at the next sweep, and are never shown before it.
func TestSearch_RetentionAndDeletedRooms(t *testing.T) {
	w := newWorld(t, 1)
	must(w.s.Create(ctx, "ann", chat.CreateRequest{Name: "short"}, ""))(t)
	must(w.s.Create(ctx, "ann", chat.CreateRequest{Name: "gone"}, ""))(t)
	for i := range 6 {
		must(w.s.Post(ctx, "ann", "short", fmt.Sprintf("keepsake number%d", i), nil, ""))(t)
	}
	must(w.s.Post(ctx, "ann", "gone", "keepsake elsewhere", nil, ""))(t)
	w.syncIndexes()
	if got := w.search("bob", "keepsake"); len(got) != 7 {
		t.Fatalf("before: %v", refs(got))
	}
	keep := int64(2)
	must(w.s.UpdateSettings(ctx, "ann", "short", chat.SettingsRequest{RetentionMessages: &keep}, false, ""))(t)
	if res := must(w.s.Compact(ctx, 1, 0, 0))(t); res.Deleted == 0 {
		t.Fatal("compaction removed nothing")
	}
	if err := w.s.Delete(ctx, "ann", "gone", false, ""); err != nil {
		t.Fatal(err)
	}
	// Before the indexer's sweep the state check already hides them.
	if got := refs(w.search("bob", "keepsake")); len(got) != 2 {
		t.Fatalf("before the sweep: %v", got)
	}
	w.syncIndexes()
	got := w.search("bob", "keepsake")
	if len(got) != 2 || !strings.Contains(got[0].Message.Text, "number4") && !strings.Contains(got[0].Message.Text, "number5") {
		t.Fatalf("after: %+v", got)
	}
	if n := must(w.x.replicas[1].idx.Count())(t); n != 2 {
		t.Fatalf("the index still holds %d messages, want 2", n)
	}
}
