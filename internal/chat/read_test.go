package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

func TestEvent_ViewFor(t *testing.T) {
	w := Event{Room: "r", Seq: 4, Ts: 99, Kind: KindWhisper, Sender: "alice", Text: "psst", To: []string{"Bob", "dave"}}
	hidden := Event{Room: "r", Seq: 4, Ts: 99, Kind: KindHidden}
	msg := Event{Room: "r", Seq: 5, Ts: 100, Kind: KindMessage, Sender: "alice", Text: "hi"}
	cases := []struct {
		name string
		in   Event
		user string
		want Event
	}{
		{"sender", w, "alice", w},
		{"sender other case", w, "ALICE", w},
		{"recipient", w, "bob", w},
		{"second recipient", w, "dave", w},
		{"bystander", w, "carol", hidden},
		{"no user", w, "", hidden},
		{"message", msg, "carol", msg},
		{"join", Event{Room: "r", Seq: 1, Kind: KindJoin, Sender: "x"}, "carol", Event{Room: "r", Seq: 1, Kind: KindJoin, Sender: "x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.ViewFor(tc.user); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ViewFor(%q) = %+v, want %+v", tc.user, got, tc.want)
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		for _, tc := range []struct {
			e    Event
			want string
		}{
			{hidden, `{"room":"r","seq":4,"ts":99,"kind":"hidden"}`},
			{w, `{"room":"r","seq":4,"ts":99,"kind":"whisper","sender":"alice","text":"psst","to":["Bob","dave"]}`},
			{msg, `{"room":"r","seq":5,"ts":100,"kind":"message","sender":"alice","text":"hi"}`},
		} {
			b, err := json.Marshal(tc.e)
			if err != nil || string(b) != tc.want {
				t.Errorf("json = %s, %v; want %s", b, err, tc.want)
			}
		}
	})
}

// historyFixture returns a room "r" with 120 events: alice's join (1), bob's
// join (2), then messages 3..120 of which every tenth is a whisper from
// alice to bob.
func historyFixture(t testing.TB) *fixture {
	f := newFixture(t)
	f.create("r", "alice")
	f.join("r", "bob")
	for i := uint64(3); i <= 120; i++ {
		if i%10 == 0 {
			f.post("r", "alice", fmt.Sprint("secret ", i), "bob")
		} else {
			f.post("r", "bob", fmt.Sprint("message ", i))
		}
	}
	f.join("r", "carol") // 121
	return f
}

func TestHistory(t *testing.T) {
	f := historyFixture(t)
	cases := []struct {
		name string
		q    HistoryQuery
		want []uint64
	}{
		{"latest default", HistoryQuery{}, seqRange(72, 121)},
		{"latest limit", HistoryQuery{Limit: 10}, seqRange(112, 121)},
		{"latest all", HistoryQuery{Limit: 500}, seqRange(1, 121)},
		{"from start", HistoryQuery{HasAfter: true, Limit: 5}, seqRange(1, 5)},
		{"after", HistoryQuery{After: 115, HasAfter: true}, seqRange(116, 121)},
		{"after last", HistoryQuery{After: 121, HasAfter: true}, []uint64{}},
		{"after beyond", HistoryQuery{After: 500, HasAfter: true}, []uint64{}},
		{"after max", HistoryQuery{After: math.MaxUint64, HasAfter: true}, []uint64{}},
		{"before", HistoryQuery{Before: 11}, seqRange(1, 10)},
		{"before limit", HistoryQuery{Before: 101, Limit: 3}, seqRange(98, 100)},
		{"before near start", HistoryQuery{Before: 3, Limit: 10}, seqRange(1, 2)},
		{"before first", HistoryQuery{Before: 1}, []uint64{}},
		{"before beyond", HistoryQuery{Before: 1000, Limit: 2}, seqRange(120, 121)},
		{"between", HistoryQuery{After: 5, HasAfter: true, Before: 9}, seqRange(6, 8)},
		{"between limit", HistoryQuery{After: 5, HasAfter: true, Before: 90, Limit: 2}, seqRange(6, 7)},
		{"between empty", HistoryQuery{After: 5, HasAfter: true, Before: 6}, []uint64{}},
		{"between inverted", HistoryQuery{After: 9, HasAfter: true, Before: 5}, []uint64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := History(f.w, "r", "carol", tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(evs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("seqs %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("limits", func(t *testing.T) {
		for _, l := range []int{-1, MaxHistoryLimit + 1} {
			_, err := History(f.w, "r", "carol", HistoryQuery{Limit: l})
			wantCode(t, err, errs.Invalid)
		}
	})
	t.Run("viewed", func(t *testing.T) {
		for user, wantKind := range map[string]string{"carol": KindHidden, "bob": KindWhisper, "Alice": KindWhisper, "zed": KindHidden} {
			evs, err := History(f.w, "r", user, HistoryQuery{After: 9, HasAfter: true, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if evs[0].Kind != wantKind || (wantKind == KindHidden) != (evs[0].Text == "") {
				t.Errorf("%s sees %+v, want kind %s", user, evs[0], wantKind)
			}
		}
	})
	t.Run("raw", func(t *testing.T) {
		evs, err := EventsAfter(f.w, "r", 9, 1)
		if err != nil || len(evs) != 1 || evs[0].Kind != KindWhisper || evs[0].Text != "secret 10" {
			t.Fatalf("EventsAfter = %+v, %v", evs, err)
		}
	})
	t.Run("missing room", func(t *testing.T) {
		_, err := History(f.w, "nope", "carol", HistoryQuery{})
		wantCode(t, err, errs.NotFound)
		_, err = EventsAfter(f.w, "nope", 0, 10)
		wantCode(t, err, errs.NotFound)
	})
}

func TestCheckRead(t *testing.T) {
	f := setup(t)
	f.post("pub", "alice", "psst", "bob")
	cases := []struct {
		room, user string
		code       errs.Code
	}{
		{"pub", "alice", ""},
		{"pub", "stranger", ""}, // public rooms are readable by anyone signed in
		{"priv", "alice", ""},
		{"priv", "bob", errs.Forbidden},
		{"gone", "alice", errs.NotFound},
		{"nope", "alice", errs.NotFound},
	}
	for _, tc := range cases {
		t.Run(tc.room+"/"+tc.user, func(t *testing.T) {
			_, err := CheckRead(f.w, tc.room, tc.user)
			wantCode(t, err, tc.code)
			_, err = History(f.w, tc.room, tc.user, HistoryQuery{})
			wantCode(t, err, tc.code)
		})
	}
	evs, _ := History(f.w, "pub", "stranger", HistoryQuery{})
	if last := evs[len(evs)-1]; last.Kind != KindHidden {
		t.Fatalf("a stranger sees %+v", last)
	}
}

func TestListRooms(t *testing.T) {
	f := setup(t)
	f.post("pub", "alice", "one")
	f.post("pub", "alice", "two") // pub: last_seq 4
	f.ok(EncodeMarkRead(MarkRead{Room: "pub", User: "bob", Seq: 3}))
	type row struct {
		Name     string
		Member   bool
		LastRead uint64
		LastSeq  uint64
		Members  int
	}
	cases := []struct {
		user string
		want []row
	}{
		{"alice", []row{{"full", true, 1, 1, 1}, {"priv", true, 1, 1, 1}, {"pub", true, 4, 4, 2}}},
		{"BOB", []row{{"full", false, 0, 1, 1}, {"pub", true, 3, 4, 2}}},
		{"carol", []row{{"full", false, 0, 1, 1}, {"pub", false, 0, 4, 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.user, func(t *testing.T) {
			rooms, err := ListRooms(f.w, tc.user)
			if err != nil {
				t.Fatal(err)
			}
			var got []row
			for _, r := range rooms {
				got = append(got, row{r.Name, r.Member, r.LastRead, r.LastSeq, r.Members})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ListRooms = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("room names sharing prefixes", func(t *testing.T) {
		f := newFixture(t)
		for _, r := range []string{"ab", "ab-x", "ab.c", "ab0", "ab_", "a"} {
			f.create(r, "alice")
			f.post(r, "alice", "x")
		}
		rooms, err := ListRooms(f.w, "alice")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range rooms {
			names = append(names, r.Name)
		}
		if want := []string{"a", "ab-x", "ab.c", "ab", "ab0", "ab_"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("rooms %q, want %q (key order)", names, want)
		}
	})
}

func TestListRooms_CorruptKey(t *testing.T) {
	for _, k := range []string{"c//x", "c/abc"} {
		f := setup(t)
		if err := f.w.Set([]byte(k), []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := ListRooms(f.w, "alice"); err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("ListRooms with key %q: %v, want a corrupt-key error", k, err)
		}
	}
}

func TestMembers(t *testing.T) {
	f := setup(t)
	f.join("pub", "Carol")
	ms, err := Members(f.w, "pub")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Username)
		if m.JoinedAt == 0 || m.Online {
			t.Errorf("member %+v", m)
		}
	}
	if want := []string{"alice", "Bob", "Carol"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("members %q, want %q", names, want)
	}
	_, err = Members(f.w, "gone")
	wantCode(t, err, errs.NotFound)
	b, _ := json.Marshal(ms[0])
	if !strings.Contains(string(b), `"username":"alice","online":false`) {
		t.Fatalf("json %s", b)
	}
}

// TestCompact checks retention (Guarantee 5): old events are removed, the
// first retained seq recorded, and resuming before it is
// ErrHistoryCompacted, never a silent gap.
func TestCompact(t *testing.T) {
	f := newFixture(t)
	f.now = 1000
	f.create("r", "alice") // seq 1 at 1000
	for range 9 {
		f.post("r", "alice", "x") // seqs 2..10 at 1001..1009
	}
	f.create("s", "bob") // seq 1 at 1010
	f.now = 2000
	// Keep the last 995 ms: events before 1005 go, seqs 1..5 of r.
	res := f.ok(EncodeCompact(Compact{RetentionMs: 995}))
	if res.N != 5 || res.More {
		t.Fatalf("compact = %+v, want 5 deleted", res)
	}
	if r := f.room("r"); r.FirstRetainedSeq != 6 || r.LastSeq != 10 {
		t.Fatalf("room %+v, want first retained 6", r)
	}
	if r := f.room("s"); r.FirstRetainedSeq != 1 {
		t.Fatalf("room s %+v, want untouched", r)
	}
	t.Run("history", func(t *testing.T) {
		for _, after := range []uint64{0, 4} {
			_, err := History(f.w, "r", "alice", HistoryQuery{After: after, HasAfter: true})
			if !errors.Is(err, ErrHistoryCompacted) || errs.CodeOf(err) != CodeHistoryCompacted {
				t.Fatalf("after %d: error %v, want ErrHistoryCompacted", after, err)
			}
			if !strings.Contains(err.Error(), "seq 6") {
				t.Fatalf("error %q does not name the first retained seq", err)
			}
			_, err = EventsAfter(f.w, "r", after, 10)
			if !errors.Is(err, ErrHistoryCompacted) {
				t.Fatalf("EventsAfter(%d): %v", after, err)
			}
		}
		evs, err := History(f.w, "r", "alice", HistoryQuery{After: 5, HasAfter: true})
		if err != nil || !reflect.DeepEqual(seqs(evs), seqRange(6, 10)) {
			t.Fatalf("after 5: %v, %v", seqs(evs), err)
		}
		evs, err = History(f.w, "r", "alice", HistoryQuery{})
		if err != nil || !reflect.DeepEqual(seqs(evs), seqRange(6, 10)) {
			t.Fatalf("latest: %v, %v", seqs(evs), err)
		}
		evs, err = History(f.w, "r", "alice", HistoryQuery{Before: 7})
		if err != nil || !reflect.DeepEqual(seqs(evs), []uint64{6}) {
			t.Fatalf("before 7: %v, %v (stops at the boundary)", seqs(evs), err)
		}
	})
	t.Run("forever", func(t *testing.T) {
		before := dump(t, f.w)
		if res := f.ok(EncodeCompact(Compact{})); res.N != 0 || dump(t, f.w) != before {
			t.Fatalf("compact without retention = %+v, changed state", res)
		}
	})
	t.Run("everything old", func(t *testing.T) {
		f.now = 1 << 40
		res := f.ok(EncodeCompact(Compact{RetentionMs: 1}))
		if res.N != 6 {
			t.Fatalf("deleted %d, want 6", res.N)
		}
		r := f.room("r")
		if r.FirstRetainedSeq != 11 {
			t.Fatalf("room %+v, want first retained 11", r)
		}
		if evs, err := History(f.w, "r", "alice", HistoryQuery{After: 10, HasAfter: true}); err != nil || len(evs) != 0 {
			t.Fatalf("after 10: %v, %v", evs, err)
		}
		p := f.post("r", "alice", "new")
		if p.Seq != 11 {
			t.Fatalf("next seq %d, want 11", p.Seq)
		}
	})
}

func TestCompact_Budget(t *testing.T) {
	f := newFixture(t)
	for _, r := range []string{"a", "b"} {
		f.create(r, "alice")
		for range 4 {
			f.post(r, "alice", "x")
		}
	}
	f.now += 1000
	var total uint64
	rounds := 0
	for {
		res := f.ok(EncodeCompact(Compact{RetentionMs: 500, Budget: 3}))
		if res.N > 3 {
			t.Fatalf("deleted %d over a budget of 3", res.N)
		}
		total += res.N
		rounds++
		// Whatever was deleted, the rest stays readable without a gap.
		for _, r := range []string{"a", "b"} {
			room := f.room(r)
			evs := f.events(r)
			if !reflect.DeepEqual(seqs(evs), seqRange(room.FirstRetainedSeq, 5)) {
				t.Fatalf("round %d room %s: seqs %v from %d", rounds, r, seqs(evs), room.FirstRetainedSeq)
			}
		}
		if !res.More {
			break
		}
	}
	if total != 10 || rounds != 4 {
		t.Fatalf("deleted %d in %d rounds, want 10 in 4", total, rounds)
	}
}

func TestCompact_DeletedRoom(t *testing.T) {
	f := newFixture(t)
	f.create("r", "alice")
	for range 5 {
		f.post("r", "alice", "x")
	}
	f.join("r", "bob")
	f.ok(EncodeDeleteRoom(DeleteRoom{Room: "r", User: "alice"}))
	res := f.ok(EncodeCompact(Compact{Budget: 4}))
	if res.N != 4 || !res.More {
		t.Fatalf("first pass %+v, want 4 deleted and more", res)
	}
	res = f.ok(EncodeCompact(Compact{Budget: 4}))
	if res.N != 3 || res.More {
		t.Fatalf("second pass %+v, want the last 3", res)
	}
	if got := dump(t, f.w); strings.Contains(got, `/e/`) {
		t.Fatalf("events left:\n%s", got)
	}
	// The name can be used again; seqs continue, and a reader of the old room
	// learns that it missed events.
	r := f.create("r", "carol")
	if r.Seq != 8 || r.Room.FirstRetainedSeq != 8 {
		t.Fatalf("recreated %+v room %+v", r, r.Room)
	}
	_, err := History(f.w, "r", "carol", HistoryQuery{After: 3, HasAfter: true})
	if !errors.Is(err, ErrHistoryCompacted) {
		t.Fatalf("resume in the old room: %v", err)
	}
	evs, err := History(f.w, "r", "carol", HistoryQuery{})
	if err != nil || !reflect.DeepEqual(seqs(evs), []uint64{8}) {
		t.Fatalf("new room history %v, %v", seqs(evs), err)
	}
}

func BenchmarkHistory(b *testing.B) {
	w := &sortedMem{}
	f := &fixture{t: b, w: w, now: 1}
	f.create("general", "alice")
	f.join("general", "bob")
	for i := range 1000 {
		if i%10 == 0 {
			f.post("general", "alice", strings.Repeat("w", 200), "bob")
		} else {
			f.post("general", "bob", strings.Repeat("m", 200))
		}
	}
	for range 100 { // other rooms in the partition
		f.create(fmt.Sprintf("room%d", f.now), "carol")
	}
	b.Run("latest50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			evs, err := History(w, "general", "carol", HistoryQuery{Limit: 50})
			if err != nil || len(evs) != 50 {
				b.Fatal(len(evs), err)
			}
		}
	})
	b.Run("after50", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			evs, err := History(w, "general", "bob", HistoryQuery{After: 500, HasAfter: true, Limit: 50})
			if err != nil || len(evs) != 50 {
				b.Fatal(len(evs), err)
			}
		}
	})
}

func BenchmarkListRooms(b *testing.B) {
	w := &sortedMem{}
	f := &fixture{t: b, w: w, now: 1}
	for i := range 100 {
		room := fmt.Sprintf("room%03d", i)
		f.create(room, "alice")
		for range 20 {
			f.post(room, "alice", "hello")
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		rooms, err := ListRooms(w, "bob")
		if err != nil || len(rooms) != 100 {
			b.Fatal(len(rooms), err)
		}
	}
}
