package chat

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

const day = msPerDay

// retain sets room's own retention as its owner; nil leaves one as it is.
func (f *fixture) retain(room, owner string, days, messages *int64) Result {
	f.t.Helper()
	c := Settings{Room: room, User: owner}
	if days != nil {
		c.Set, c.RetentionDays = c.Set|SetRetentionDays, *days
	}
	if messages != nil {
		c.Set, c.RetentionMessages = c.Set|SetRetentionMessages, *messages
	}
	return f.ok(EncodeSettings(c))
}

func ptr(v int64) *int64 { return &v }

// texts returns the texts of room's retained messages, oldest first.
func (f *fixture) texts(room string) []string {
	f.t.Helper()
	var out []string
	for _, e := range f.events(room) {
		if e.Kind == KindMessage {
			out = append(out, e.Text)
		}
	}
	return out
}

// compactAll runs Compact at the fixture's time until it has no more to do
// and returns how many keys it deleted and how many commands it took.
func (f *fixture) compactAll(c Compact) (deleted uint64, rounds int) {
	f.t.Helper()
	for rounds < 1000 {
		rounds++
		res := f.ok(EncodeCompact(c))
		deleted += res.N
		if !res.More {
			return deleted, rounds
		}
	}
	f.t.Fatal("Compact never finished")
	return 0, 0
}

// storedEvents returns the seqs of room's events in the store, whatever
// firstRetained says.
func storedEvents(t *testing.T, r state.Reader, room string) []uint64 {
	t.Helper()
	var out []uint64
	lo := eventsPrefix(room)
	if err := r.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
		seq, err := seqOfEventKey(room, k)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seq)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCompact_RoomRetentionByAge(t *testing.T) {
	f := newFixture(t)
	f.now = 10 * day
	f.create("short", "alice") // seq 1
	f.create("plain", "alice")
	f.retain("short", "alice", ptr(1), nil) // seq 2
	f.post("short", "alice", "old")         // seq 3
	f.post("plain", "alice", "old")
	f.now = 11*day + 10
	f.post("short", "alice", "new") // seq 4, less than a day before the compaction
	f.now = 12 * day

	// The cluster keeps everything; the room keeps one day.
	f.compactAll(Compact{})
	if got := f.texts("short"); !reflect.DeepEqual(got, []string{"new"}) {
		t.Fatalf("short room keeps %q, want the last day's only", got)
	}
	if r := f.room("short"); r.FirstRetainedSeq != 4 || r.RetentionDays != 1 {
		t.Fatalf("room %+v, want first retained 4 and retention_days 1", r)
	}
	if got := storedEvents(t, f.w, "short"); !reflect.DeepEqual(got, []uint64{4}) {
		t.Fatalf("stored events %v: expired events must leave the store", got)
	}
	if got := f.texts("plain"); !reflect.DeepEqual(got, []string{"old"}) {
		t.Fatalf("room without its own retention keeps %q, want the cluster default (for ever)", got)
	}
	_, err := History(f.w, "short", "alice", HistoryQuery{After: 1, HasAfter: true})
	if !errors.Is(err, ErrHistoryCompacted) || !strings.Contains(err.Error(), "seq 4") {
		t.Fatalf("resuming before the horizon: %v, want history_compacted naming seq 4", err)
	}
}

func TestCompact_RoomRetentionOverridesDefault(t *testing.T) {
	f := newFixture(t)
	f.now = 10 * day
	for _, r := range []string{"forever", "longer", "plain"} {
		f.create(r, "alice")
		f.post(r, "alice", "ten days ago")
	}
	f.retain("forever", "alice", ptr(RetentionForever), nil)
	f.retain("longer", "alice", ptr(30), nil)
	f.now = 20 * day
	f.compactAll(Compact{RetentionMs: 5 * day}) // the cluster keeps 5 days
	if got := f.texts("plain"); len(got) != 0 {
		t.Fatalf("plain room keeps %q, want the cluster default to remove it", got)
	}
	for _, r := range []string{"forever", "longer"} {
		if got := f.texts(r); !reflect.DeepEqual(got, []string{"ten days ago"}) || f.room(r).FirstRetainedSeq != 1 {
			t.Fatalf("room %s keeps %q from seq %d, want everything", r, got, f.room(r).FirstRetainedSeq)
		}
	}
	f.now = 41 * day
	f.compactAll(Compact{RetentionMs: 5 * day})
	if got := f.texts("longer"); len(got) != 0 {
		t.Fatalf("30-day room keeps %q after 31 days", got)
	}
	if got := f.texts("forever"); len(got) != 1 {
		t.Fatalf("room kept for ever lost its message: %q", got)
	}
}

func TestCompact_RoomRetentionByCount(t *testing.T) {
	f := newFixture(t)
	f.create("r", "alice")                                                    // seq 1: join
	f.join("r", "bob")                                                        // seq 2
	f.post("r", "alice", "m1")                                                // seq 3
	f.post("r", "alice", "m2")                                                // seq 4
	f.join("r", "carol")                                                      // seq 5
	f.post("r", "alice", "m3")                                                // seq 6
	f.ok(EncodeReact(React{Room: "r", User: "bob", Seq: 3, Emoji: ":tada:"})) // seq 7: a reaction to m1
	f.post("r", "bob", "m4", "alice")                                         // seq 8: a whisper counts
	f.post("r", "alice", "m5")                                                // seq 9
	f.retain("r", "alice", nil, ptr(3))                                       // seq 10: settings

	res := f.ok(EncodeCompact(Compact{}))
	if res.More {
		t.Fatalf("compact = %+v, want done in one round", res)
	}
	// The newest 3 messages are m3 (6), m4 (8), m5 (9): everything before
	// seq 6 goes, carol's join too; the reaction and the settings event
	// after it stay.
	if got := storedEvents(t, f.w, "r"); !reflect.DeepEqual(got, []uint64{6, 7, 8, 9, 10}) {
		t.Fatalf("stored events %v, want 6..10", got)
	}
	r := f.room("r")
	if r.FirstRetainedSeq != 6 || r.RetentionMessages != 3 {
		t.Fatalf("room %+v, want first retained 6, retention_messages 3", r)
	}
	if _, err := EventsAfter(f.w, "r", 2, 10); !errors.Is(err, ErrHistoryCompacted) {
		t.Fatalf("resuming from seq 2: %v, want history_compacted", err)
	}

	t.Run("later posts", func(t *testing.T) {
		f.post("r", "alice", "m6") // seq 11
		f.ok(EncodeEdit(Edit{Room: "r", User: "alice", Seq: 11, Text: "m6 edited"}))
		f.post("r", "alice", "m7") // seq 13
		f.compactAll(Compact{})
		if got := f.texts("r"); !reflect.DeepEqual(got, []string{"m5", "m6 edited", "m7"}) {
			t.Fatalf("messages %q, want the newest 3", got)
		}
		if r := f.room("r"); r.FirstRetainedSeq != 9 {
			t.Fatalf("first retained %d, want 9 (m5)", r.FirstRetainedSeq)
		}
	})
	t.Run("idle", func(t *testing.T) {
		before := dump(t, f.w)
		if res := f.ok(EncodeCompact(Compact{})); res.N != 0 || res.More || dump(t, f.w) != before {
			t.Fatalf("compact with nothing to do = %+v, changed state: %v", res, dump(t, f.w) != before)
		}
	})
	t.Run("off", func(t *testing.T) {
		f.retain("r", "alice", nil, ptr(0))
		for range 5 {
			f.post("r", "alice", "more")
		}
		f.compactAll(Compact{})
		if got := len(f.texts("r")); got != 8 {
			t.Fatalf("%d messages after turning the count off, want all 8", got)
		}
	})
}

func TestCompact_RoomRetentionBoth(t *testing.T) {
	f := newFixture(t)
	f.now = day
	f.create("r", "alice")
	f.retain("r", "alice", ptr(2), ptr(3))
	for _, text := range []string{"a", "b"} {
		f.post("r", "alice", text)
	}
	f.now = 3*day + 100
	for _, text := range []string{"c", "d", "e", "f"} {
		f.post("r", "alice", text)
	}
	f.now = 4 * day
	// Age removes a and b (older than 2 days); count then keeps d, e, f.
	f.compactAll(Compact{})
	if got := f.texts("r"); !reflect.DeepEqual(got, []string{"d", "e", "f"}) {
		t.Fatalf("messages %q, want d e f", got)
	}
	f.now = 6 * day
	f.compactAll(Compact{})
	if got := f.texts("r"); len(got) != 0 {
		t.Fatalf("messages %q, want none after 2 days", got)
	}
	f.post("r", "alice", "g")
	if got := f.texts("r"); !reflect.DeepEqual(got, []string{"g"}) {
		t.Fatalf("messages %q after a new post", got)
	}
	f.compactAll(Compact{})
	if got := f.texts("r"); !reflect.DeepEqual(got, []string{"g"}) {
		t.Fatalf("the count miscounted after age removed counted messages: %q", got)
	}
}

func TestCompact_LegalHold(t *testing.T) {
	f := newFixture(t)
	f.create("held", "alice")
	f.join("held", "bob")
	for _, text := range []string{"a", "b", "c", "d"} {
		f.post("held", "bob", text) // seqs 3..6
	}
	f.retain("held", "alice", ptr(1), ptr(1))

	_, err := f.apply(EncodeLegalHold(LegalHold{Room: "held", User: "alice"}))
	wantCode(t, err, errs.Forbidden) // the owner is no admin
	res := f.ok(EncodeLegalHold(LegalHold{Room: "held", User: "root", Admin: true}))
	if res.Seq == 0 || res.Room == nil || !res.Room.LegalHold {
		t.Fatalf("hold = %+v, want an event and the room held", res)
	}
	if again := f.ok(EncodeLegalHold(LegalHold{Room: "held", User: "root", Admin: true})); again.Seq != 0 {
		t.Fatalf("holding a held room added event %d", again.Seq)
	}

	f.now += 10 * day
	before := dump(t, f.w)
	f.compactAll(Compact{RetentionMs: 1})
	if dump(t, f.w) != before {
		t.Fatal("compaction deleted from a room under legal hold")
	}
	for _, c := range []struct {
		cmd  Command
		word string
	}{
		{Remove{Room: "held", User: "bob", Seq: 3}, "deleted"},
		{Remove{Room: "held", User: "root", Seq: 3, Admin: true}, "deleted"},
		{Edit{Room: "held", User: "bob", Seq: 4, Text: "rewritten"}, "edited"},
		{DeleteRoom{Room: "held", User: "alice"}, "deleted"},
	} {
		_, err := f.apply(encode(t, c.cmd))
		wantCode(t, err, errs.Conflict)
		if !strings.Contains(err.Error(), "legal hold") || !strings.Contains(err.Error(), c.word) {
			t.Fatalf("%T refused with %q", c.cmd, err)
		}
	}
	if dump(t, f.w) != before {
		t.Fatal("a refused change wrote to a room under legal hold")
	}
	f.ok(EncodeReact(React{Room: "held", User: "alice", Seq: 3, Emoji: ":tada:"})) // adding is allowed
	f.post("held", "bob", "while held")

	f.ok(EncodeLegalHold(LegalHold{Room: "held", User: "root", Admin: true, Lift: true}))
	if f.room("held").LegalHold {
		t.Fatal("hold not lifted")
	}
	f.now += 10 * day
	f.compactAll(Compact{})
	if got := storedEvents(t, f.w, "held"); len(got) != 0 {
		t.Fatalf("events %v stay after the hold was lifted and a day passed", got)
	}
	log, err := Moderation(f.w, "held", "alice", false, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Events) != 0 {
		t.Fatalf("moderation log %+v: the hold events expired with the rest", log.Events)
	}
}

func TestCompact_RoomRetentionBudget(t *testing.T) {
	build := func() *fixture {
		f := newFixture(t)
		f.create("a", "alice")
		f.create("b", "alice")
		for range 30 {
			p := f.post("a", "alice", "x")
			f.ok(EncodeReact(React{Room: "a", User: "alice", Seq: p.Seq, Emoji: ":tada:"}))
			f.post("b", "alice", "y")
		}
		f.retain("a", "alice", nil, ptr(4))
		f.retain("b", "alice", ptr(1), ptr(25))
		f.now += 2 * day
		return f
	}
	whole, small := build(), build()
	if _, rounds := whole.compactAll(Compact{}); rounds != 1 {
		t.Fatalf("default budget took %d rounds", rounds)
	}
	deleted, rounds := small.compactAll(Compact{Budget: 5})
	if rounds < 10 {
		t.Fatalf("budget 5 finished in %d rounds, want it to bound each", rounds)
	}
	if deleted == 0 || dump(t, whole.w) != dump(t, small.w) {
		t.Fatal("compacting with a small budget ends elsewhere than with a large one")
	}
	if got := len(small.texts("a")); got != 4 {
		t.Fatalf("room a keeps %d messages, want 4", got)
	}
	if got := storedEvents(t, small.w, "b"); len(got) != 0 {
		t.Fatalf("room b keeps %v, want none after two days", got)
	}
}

func TestSettings_Retention(t *testing.T) {
	f := newFixture(t)
	f.create("r", "alice")
	f.join("r", "mona")
	f.ok(EncodeSetRole(SetRole{Room: "r", User: "alice", Target: "mona", Role: RoleModerator}))
	plain := dump(t, f.w)

	_, err := f.apply(EncodeSettings(Settings{Room: "r", User: "mona", Set: SetRetentionDays, RetentionDays: 3}))
	wantCode(t, err, errs.Forbidden)
	for _, c := range []Settings{
		{Set: SetRetentionDays, RetentionDays: -2},
		{Set: SetRetentionDays, RetentionDays: MaxRetentionDays + 1},
		{Set: SetRetentionMessages, RetentionMessages: MaxRetentionMessages + 1},
	} {
		c.Room, c.User = "r", "alice"
		_, err := f.apply(EncodeSettings(c))
		wantCode(t, err, errs.Invalid)
	}
	if dump(t, f.w) != plain {
		t.Fatal("a refused settings change wrote")
	}
	res := f.retain("r", "alice", ptr(RetentionForever), ptr(50))
	if res.Room.RetentionDays != RetentionForever || res.Room.RetentionMessages != 50 {
		t.Fatalf("room %+v", res.Room)
	}
	evs := f.events("r")
	if last := evs[len(evs)-1]; last.Kind != KindSettings || !slices.Equal(last.Changed, []string{"retention_days", "retention_messages"}) {
		t.Fatalf("settings event %+v", last)
	}
	res = f.ok(EncodeSettings(Settings{Room: "r", User: "root", Admin: true, Set: SetRetentionDays | SetRetentionMessages}))
	if res.Room.RetentionDays != 0 || res.Room.RetentionMessages != 0 {
		t.Fatalf("back to the defaults: %+v", res.Room)
	}
	rec, err := getRoom(f.w, "r")
	if err != nil || rec.settings != (roomSettings{}) {
		t.Fatalf("room back to the defaults stores settings %+v (%v)", rec.settings, err)
	}
}

func TestDecodeRoom_RetentionCanonical(t *testing.T) {
	rec := &roomRecord{owner: "alice", maxMembers: 3, members: 1, lastSeq: 9, firstRetained: 4,
		settings: roomSettings{legalHold: true, retention: roomRetention{days: 7, messages: 5, countedTo: 6, counted: 2}}}
	got, err := decodeRoom([]byte("k"), encodeRoom(rec))
	if err != nil || !reflect.DeepEqual(got, rec) {
		t.Fatalf("decodeRoom(encodeRoom(%+v)) = %+v, %v", rec, got, err)
	}
	for name, r := range map[string]roomRetention{
		"days below -1":        {days: -2},
		"count without limit":  {days: 1, countedTo: 3},
		"too many messages":    {messages: MaxRetentionMessages + 1},
		"too many days":        {days: MaxRetentionDays + 1},
		"zero with flag":       {},
		"count under no limit": {messages: -1, counted: 1},
	} {
		b := appendRetention(nil, r)
		d := decoder{b: b}
		d.retention()
		if d.err == nil {
			t.Errorf("%s: %+v decoded", name, r)
		}
	}
}
