package chat

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

// setup is the state every TestStateMachine_Apply case starts from:
//
//	pub  (public, max 3): alice (owner), bob           seqs 1-2
//	priv (private "H1"):  alice                        seq 1
//	full (public, max 1): alice                        seq 1
//	gone (deleted)
func setup(t testing.TB) *fixture {
	f := newFixture(t)
	f.ok(EncodeCreateRoom(CreateRoom{Room: "pub", Owner: "alice", MaxMembers: 3}))
	f.join("pub", "Bob")
	f.ok(EncodeCreateRoom(CreateRoom{Room: "priv", Owner: "alice", Private: true, PasswordHash: "H1", MaxMembers: 30}))
	f.ok(EncodeCreateRoom(CreateRoom{Room: "full", Owner: "alice", MaxMembers: 1}))
	f.create("gone", "alice")
	f.ok(EncodeDeleteRoom(DeleteRoom{Room: "gone", User: "alice"}))
	return f
}

func TestStateMachine_Apply(t *testing.T) {
	type check func(t *testing.T, f *fixture, r Result)
	cases := []struct {
		name     string
		cmd      Command
		wantCode errs.Code
		word     string // a refusal's message must contain it
		noop     bool   // success that must change nothing
		check    check
	}{
		// CreateRoom
		{name: "create", cmd: CreateRoom{Room: "new", Owner: "carol", MaxMembers: 5}, check: func(t *testing.T, f *fixture, r Result) {
			want := Room{Name: "new", Owner: "carol", MaxMembers: 5, Members: 1, CreatedAt: r.Ts, LastSeq: 1, FirstRetainedSeq: 1}
			if r.Seq != 1 || r.Room == nil || *r.Room != want || f.room("new") != want {
				t.Fatalf("result %+v room %+v, want %+v", r, r.Room, want)
			}
			if evs := f.events("new"); len(evs) != 1 || evs[0].Kind != KindJoin || evs[0].Sender != "carol" {
				t.Fatalf("events %+v, want carol's join", evs)
			}
		}},
		{name: "create private", cmd: CreateRoom{Room: "p2", Owner: "carol", Private: true, PasswordHash: "H", MaxMembers: 5}, check: func(t *testing.T, f *fixture, r Result) {
			if !f.room("p2").Private {
				t.Fatal("room is not private")
			}
		}},
		{name: "create existing", cmd: CreateRoom{Room: "pub", Owner: "carol", MaxMembers: 5}, wantCode: errs.Conflict, word: "exists"},
		{name: "create not canonical", cmd: CreateRoom{Room: "Pub2", Owner: "carol", MaxMembers: 5}, wantCode: errs.Invalid, word: "room name"},
		{name: "create bad owner", cmd: CreateRoom{Room: "x", Owner: "ca rol", MaxMembers: 5}, wantCode: errs.Invalid, word: "username"},
		{name: "create private without hash", cmd: CreateRoom{Room: "x", Owner: "carol", Private: true, MaxMembers: 5}, wantCode: errs.Invalid, word: "password"},
		{name: "create public with hash", cmd: CreateRoom{Room: "x", Owner: "carol", PasswordHash: "H", MaxMembers: 5}, wantCode: errs.Invalid, word: "password"},
		{name: "create zero members", cmd: CreateRoom{Room: "x", Owner: "carol"}, wantCode: errs.Invalid, word: "max_members"},
		{name: "create over deleted continues seqs", cmd: CreateRoom{Room: "gone", Owner: "carol", MaxMembers: 5}, check: func(t *testing.T, f *fixture, r Result) {
			if r.Seq != 2 || r.Room.FirstRetainedSeq != 2 || r.Room.Owner != "carol" || r.Room.Members != 1 {
				t.Fatalf("result %+v room %+v, want seq 2 retained from 2", r, r.Room)
			}
		}},
		// DeleteRoom
		{name: "delete by owner", cmd: DeleteRoom{Room: "pub", User: "ALICE"}, check: func(t *testing.T, f *fixture, _ Result) {
			if _, found, _ := GetRoom(f.w, "pub"); found {
				t.Fatal("deleted room found")
			}
			if _, err := Members(f.w, "pub"); !errs.Is(err, errs.NotFound) {
				t.Fatalf("Members of deleted room: %v", err)
			}
			n := 0
			_ = f.w.Scan(membersPrefix("pub"), state.PrefixEnd(membersPrefix("pub")), func(_, _ []byte) bool { n++; return true })
			if n != 0 {
				t.Fatalf("%d member records left", n)
			}
		}},
		{name: "delete by admin", cmd: DeleteRoom{Room: "pub", User: "root", Admin: true}},
		{name: "delete by member", cmd: DeleteRoom{Room: "pub", User: "bob"}, wantCode: errs.Forbidden, word: "owner"},
		{name: "delete missing", cmd: DeleteRoom{Room: "nope", User: "alice"}, wantCode: errs.NotFound},
		{name: "delete deleted", cmd: DeleteRoom{Room: "gone", User: "alice"}, wantCode: errs.NotFound},
		// Join
		{name: "join", cmd: Join{Room: "pub", User: "carol"}, check: func(t *testing.T, f *fixture, r Result) {
			if r.Seq != 3 || r.User != "carol" || r.Room.Members != 3 || r.Room.LastSeq != 3 {
				t.Fatalf("result %+v room %+v", r, r.Room)
			}
		}},
		{name: "join twice", cmd: Join{Room: "pub", User: "bob"}, noop: true, check: func(t *testing.T, f *fixture, r Result) {
			if r.Seq != 0 || r.User != "Bob" || r.Room.Members != 2 || r.Room.LastSeq != 2 {
				t.Fatalf("result %+v room %+v", r, r.Room)
			}
		}},
		{name: "join twice private without password", cmd: Join{Room: "priv", User: "alice"}, noop: true},
		{name: "join private", cmd: Join{Room: "priv", User: "bob", PasswordHash: "H1"}},
		{name: "join private without password", cmd: Join{Room: "priv", User: "bob"}, wantCode: errs.Forbidden, word: "password"},
		{name: "join private wrong password", cmd: Join{Room: "priv", User: "bob", PasswordHash: "H2"}, wantCode: errs.Forbidden, word: "password"},
		{name: "join full", cmd: Join{Room: "full", User: "bob"}, wantCode: errs.Conflict, word: `room "full" is full (member limit 1)`},
		{name: "join missing", cmd: Join{Room: "nope", User: "bob"}, wantCode: errs.NotFound},
		{name: "join deleted", cmd: Join{Room: "gone", User: "bob"}, wantCode: errs.NotFound},
		{name: "join bad user", cmd: Join{Room: "pub", User: "bob!"}, wantCode: errs.Invalid},
		// Leave
		{name: "leave", cmd: Leave{Room: "pub", User: "BOB"}, check: func(t *testing.T, f *fixture, r Result) {
			evs := f.events("pub")
			if r.Seq != 3 || r.Room.Members != 1 || evs[2].Kind != KindLeave || evs[2].Sender != "Bob" {
				t.Fatalf("result %+v, events %+v", r, evs)
			}
		}},
		{name: "leave not member", cmd: Leave{Room: "pub", User: "carol"}, noop: true},
		{name: "leave missing", cmd: Leave{Room: "nope", User: "bob"}, wantCode: errs.NotFound},
		// MarkRead
		{name: "mark read capped", cmd: MarkRead{Room: "pub", User: "alice", Seq: 99}, check: func(t *testing.T, f *fixture, r Result) {
			if r.N != 2 {
				t.Fatalf("read marker %d, want 2", r.N)
			}
		}},
		{name: "mark read backwards", cmd: MarkRead{Room: "pub", User: "bob", Seq: 1}, noop: true, check: func(t *testing.T, f *fixture, r Result) {
			if r.N != 2 {
				t.Fatalf("read marker %d, want 2 (own join)", r.N)
			}
		}},
		{name: "mark read not member", cmd: MarkRead{Room: "pub", User: "carol", Seq: 1}, wantCode: errs.Forbidden},
		{name: "mark read missing", cmd: MarkRead{Room: "nope", User: "bob", Seq: 1}, wantCode: errs.NotFound},
		// Post
		{name: "post", cmd: Post{Room: "pub", User: "bob", Text: "hi"}, check: func(t *testing.T, f *fixture, r Result) {
			evs := f.events("pub")
			want := Event{Room: "pub", Seq: 3, Ts: r.Ts, Kind: KindMessage, Sender: "Bob", Text: "hi"}
			if r.Seq != 3 || r.User != "Bob" || !reflect.DeepEqual(evs[2], want) || f.room("pub").LastSeq != 3 {
				t.Fatalf("result %+v, event %+v, want %+v", r, evs[2], want)
			}
		}},
		{name: "whisper", cmd: Post{Room: "pub", User: "alice", To: []string{"bob", "BOB", "alice"}, Text: "psst"}, check: func(t *testing.T, f *fixture, r Result) {
			e := f.events("pub")[2]
			if e.Kind != KindWhisper || !reflect.DeepEqual(e.To, []string{"Bob", "alice"}) {
				t.Fatalf("event %+v, want a whisper to Bob and alice", e)
			}
		}},
		{name: "post not member", cmd: Post{Room: "pub", User: "carol", Text: "hi"}, wantCode: errs.Forbidden, word: "join"},
		{name: "post empty", cmd: Post{Room: "pub", User: "bob"}, wantCode: errs.Invalid, word: "text"},
		{name: "whisper to non-member", cmd: Post{Room: "pub", User: "bob", To: []string{"alice", "carol"}, Text: "x"}, wantCode: errs.Invalid, word: "to"},
		{name: "whisper to bad name", cmd: Post{Room: "pub", User: "bob", To: []string{"a b"}, Text: "x"}, wantCode: errs.Invalid, word: "to"},
		{name: "post missing room", cmd: Post{Room: "nope", User: "bob", Text: "x"}, wantCode: errs.NotFound},
		{name: "post deleted room", cmd: Post{Room: "gone", User: "alice", Text: "x"}, wantCode: errs.NotFound},
		{name: "post bad room", cmd: Post{Room: "a/b", User: "bob", Text: "x"}, wantCode: errs.Invalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t)
			before := dump(t, f.w)
			r, err := f.apply(encode(t, tc.cmd))
			wantCode(t, err, tc.wantCode)
			if err != nil && !strings.Contains(err.Error(), tc.word) {
				t.Fatalf("error %q does not name %q", err, tc.word)
			}
			after := dump(t, f.w)
			if (tc.wantCode != "" || tc.noop) != (before == after) {
				t.Fatalf("state changed = %v, want %v:\n%s\nvs\n%s", before != after, tc.wantCode == "" && !tc.noop, before, after)
			}
			if tc.check != nil {
				tc.check(t, f, r)
			}
		})
	}
}

func TestStateMachine_ApplyGarbage(t *testing.T) {
	for _, cmd := range [][]byte{{Tag}, {Tag, 'Z'}, {Tag, opPost, 0xff}, EncodeLeave(Leave{Room: "pub", User: "bob"})[:5]} {
		f := setup(t)
		before := dump(t, f.w)
		_, err := f.apply(cmd)
		wantCode(t, err, errs.Invalid)
		if dump(t, f.w) != before {
			t.Fatalf("% x changed the state", cmd)
		}
	}
}

// TestStateMachine_ApplySeqs checks Guarantee 3 within a room: events of
// every kind take gap-free seqs, no-ops and refusals take none, and times
// never go back even when the stamped time does.
func TestStateMachine_ApplySeqs(t *testing.T) {
	f := newFixture(t)
	f.create("r", "alice")                                                  // 1 join
	f.join("r", "bob")                                                      // 2 join
	f.post("r", "alice", "hello")                                           // 3 message
	f.join("r", "bob")                                                      // no-op
	f.post("r", "bob", "psst", "alice")                                     // 4 whisper
	f.ok(EncodeLeave(Leave{Room: "r", User: "carol"}))                      // no-op
	f.join("r", "carol")                                                    // 5 join
	_, err := f.apply(EncodePost(Post{Room: "r", User: "dave", Text: "x"})) // refused
	wantCode(t, err, errs.Forbidden)
	f.ok(EncodeMarkRead(MarkRead{Room: "r", User: "carol", Seq: 5})) // no event
	f.now = 10                                                       // the stamp goes back
	f.ok(EncodeLeave(Leave{Room: "r", User: "bob"}))                 // 6 leave
	f.create("other", "bob")                                         // another room's 1
	f.post("r", "carol", "bye", "alice", "carol")                    // 7 whisper
	f.ok(EncodeDeleteRoom(DeleteRoom{Room: "other", User: "bob"}))   // not an event of r
	f.post("r", "alice", "last")                                     // 8 message
	evs := f.events("r")
	if got, want := seqs(evs), seqRange(1, 8); !reflect.DeepEqual(got, want) {
		t.Fatalf("seqs %v, want %v", got, want)
	}
	kinds := make([]string, len(evs))
	for i, e := range evs {
		kinds[i] = e.Kind
		if i > 0 && e.Ts < evs[i-1].Ts {
			t.Fatalf("time goes back at seq %d: %d < %d", e.Seq, e.Ts, evs[i-1].Ts)
		}
	}
	want := []string{KindJoin, KindJoin, KindMessage, KindWhisper, KindJoin, KindLeave, KindWhisper, KindMessage}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	if r := f.room("r"); r.LastSeq != 8 || r.Members != 2 {
		t.Fatalf("room %+v", r)
	}
}

// randomCommands returns n commands over a few rooms and users, mixing every
// kind, refusals included.
func randomCommands(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	rooms := []string{"a", "b", "c.d"}
	users := []string{"alice", "bob", "Carol", "dave"}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	var cmds [][]byte
	for range n {
		room, user := pick(rooms), pick(users)
		var c Command
		switch rng.IntN(16) {
		case 0:
			c = CreateRoom{Room: room, Owner: user, MaxMembers: uint64(1 + rng.IntN(4))}
		case 1:
			c = CreateRoom{Room: room, Owner: user, Private: true, PasswordHash: "H", MaxMembers: 3}
		case 2:
			c = DeleteRoom{Room: room, User: user, Admin: rng.IntN(4) == 0}
		case 3, 4:
			c = Join{Room: room, User: user, PasswordHash: []string{"", "H", "X"}[rng.IntN(3)]}
		case 5:
			c = Leave{Room: room, User: user}
		case 6:
			c = MarkRead{Room: room, User: user, Seq: uint64(rng.IntN(20))}
		case 7:
			c = Post{Room: room, User: user, Text: "to " + pick(users), To: []string{pick(users)}}
		case 8:
			c = Compact{RetentionMs: uint64(rng.IntN(30)), Budget: uint64(rng.IntN(3))}
		case 9:
			c = Settings{Room: room, User: user, Admin: rng.IntN(2) == 0, Set: SetRetentionDays | SetRetentionMessages,
				RetentionDays: int64(rng.IntN(3)) - 1, RetentionMessages: int64(rng.IntN(5)) - 1}
		case 10:
			c = LegalHold{Room: room, User: user, Admin: rng.IntN(3) != 0, Lift: rng.IntN(2) == 0}
		case 11:
			c = CreateOutHook{Room: room, User: user, ID: "000000000000000" + fmt.Sprint(rng.IntN(3)), Name: "n", URL: "https://x/", Secret: "s", Triggers: []string{"1", "2", "3"}[:rng.IntN(3)]}
		case 12:
			c = Delivered{Room: room, ID: "000000000000000" + fmt.Sprint(rng.IntN(3)), Seq: uint64(rng.IntN(20)), Due: int64(rng.IntN(10)), Attempt: 1, OK: rng.IntN(2) == 0}
		default:
			c = Post{Room: room, User: user, Text: fmt.Sprint(rng.Uint64())}
		}
		cmds = append(cmds, encode(nil, c))
	}
	return cmds
}

func TestStateMachine_ApplyDeterministic(t *testing.T) {
	cmds := randomCommands(2000, 7)
	run := func() (string, [][]byte) {
		mem := state.NewMem()
		var results [][]byte
		for i, c := range cmds {
			res, err := StateMachine{}.Apply(mem, state.Meta{Partition: 1, Index: uint64(i + 1), TimeMs: int64(i / 3)}, c)
			if err != nil {
				t.Fatalf("Apply %d: %v", i, err)
			}
			results = append(results, res)
		}
		return dump(t, mem), results
	}
	d1, r1 := run()
	d2, r2 := run()
	for i := range r1 {
		if !bytes.Equal(r1[i], r2[i]) {
			t.Fatalf("result %d differs: % x vs % x", i, r1[i], r2[i])
		}
	}
	if d1 != d2 {
		t.Fatal("states differ")
	}
	// The run must exercise more than refusals.
	ok := 0
	for _, r := range r1 {
		if r[0] == statusOK {
			ok++
		}
	}
	if ok < len(r1)/4 {
		t.Fatalf("only %d of %d commands succeeded", ok, len(r1))
	}
}

// TestStateMachine_ApplyInvariants replays random commands and checks, after
// each, that every room's events are gap-free from its first retained seq
// to its last seq and that its member count matches its member records.
func TestStateMachine_ApplyInvariants(t *testing.T) {
	f := newFixture(t)
	for i, c := range randomCommands(1500, 11) {
		f.apply(c)
		if i%25 != 0 {
			continue
		}
		err := forEachRoom(f.w, func(room string, rec *roomRecord) (bool, error) {
			if rec.deleted {
				return true, nil
			}
			evs, err := EventsAfter(f.w, room, rec.firstRetained-1, 1<<30)
			if err != nil {
				return false, err
			}
			if want := seqRange(rec.firstRetained, rec.lastSeq); !reflect.DeepEqual(seqs(evs), want) {
				return false, fmt.Errorf("room %s seqs %v, want %v", room, seqs(evs), want)
			}
			if r := rec.settings.retention; r.messages > 0 {
				var n uint64
				for _, e := range evs {
					if e.Seq < r.countedTo && (e.Kind == KindMessage || e.Kind == KindWhisper) {
						n++
					}
				}
				if n != r.counted || r.countedTo < rec.firstRetained || r.countedTo > rec.lastSeq+1 {
					return false, fmt.Errorf("room %s counts %d messages before %d, holds %d", room, r.counted, r.countedTo, n)
				}
			}
			ms, err := Members(f.w, room)
			if err != nil {
				return false, err
			}
			if uint64(len(ms)) != rec.members || rec.members > rec.maxMembers {
				return false, fmt.Errorf("room %s: %d member records, count %d, max %d", room, len(ms), rec.members, rec.maxMembers)
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("after command %d: %v", i, err)
		}
	}
}

func TestStateMachine_ApplyCorruptRecord(t *testing.T) {
	f := newFixture(t)
	if err := f.w.Set(roomKey("r"), []byte("junk")); err != nil {
		t.Fatal(err)
	}
	if _, err := (StateMachine{}).Apply(f.w, state.Meta{}, EncodeJoin(Join{Room: "r", User: "bob"})); err == nil {
		t.Fatal("Apply over a corrupt record succeeded, want error")
	}
}

// FuzzStateMachine_Apply applies arbitrary commands to a populated state:
// Apply never fails on sound state, and a refusal changes nothing.
func FuzzStateMachine_Apply(f *testing.F) {
	for _, c := range randomCommands(30, 3) {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cmd []byte) {
		fx := setup(t)
		before := dump(t, fx.w)
		res, err := StateMachine{}.Apply(fx.w, state.Meta{Partition: 1, TimeMs: 5000}, cmd)
		if err != nil {
			t.Fatalf("Apply(% x): %v", cmd, err)
		}
		if _, derr := DecodeResult(res); derr != nil {
			if errs.CodeOf(derr) == errs.Internal {
				t.Fatalf("malformed result % x", res)
			}
			if dump(t, fx.w) != before {
				t.Fatalf("refused % x changed the state", cmd)
			}
		}
	})
}

func BenchmarkStateMachine_ApplyPost(b *testing.B) {
	for _, size := range []int{200, 2000} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			cmd := EncodePost(Post{Room: "general", User: "alice", Text: strings.Repeat("x", size)})
			var sm StateMachine
			var w *sortedMem
			reset := func() {
				w = &sortedMem{}
				f := &fixture{t: b, w: w, now: 1}
				f.create("general", "alice")
				for i := range 29 {
					f.join("general", fmt.Sprintf("user%d", i))
				}
			}
			reset()
			b.ReportAllocs()
			b.SetBytes(int64(len(cmd)))
			b.ResetTimer()
			for i := range b.N {
				if i%8192 == 8191 { // keep memory bounded
					b.StopTimer()
					reset()
					b.StartTimer()
				}
				res, err := sm.Apply(w, state.Meta{Index: uint64(i), TimeMs: int64(i)}, cmd)
				if err != nil || res[0] != statusOK {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// failingWriter fails every write, as a full or broken disk would.
type failingWriter struct{ state.Writer }

func (failingWriter) Set(_, _ []byte) error { return fmt.Errorf("disk on fire") }
func (failingWriter) Delete(_ []byte) error { return fmt.Errorf("disk on fire") }

func TestStateMachine_ApplyWriteError(t *testing.T) {
	for _, c := range []Command{
		CreateRoom{Room: "new", Owner: "alice", MaxMembers: 3},
		Join{Room: "pub", User: "carol"},
		Leave{Room: "pub", User: "bob"},
		Post{Room: "pub", User: "bob", Text: "x"},
		MarkRead{Room: "pub", User: "bob", Seq: 3},
		DeleteRoom{Room: "pub", User: "alice"},
		Compact{RetentionMs: 1},
	} {
		f := setup(t)
		f.post("pub", "alice", "x")
		if _, err := (StateMachine{}).Apply(failingWriter{f.w}, state.Meta{TimeMs: 1 << 40}, encode(t, c)); err == nil {
			t.Errorf("%T over a failing writer succeeded, want error", c)
		}
	}
}
