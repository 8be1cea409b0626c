package tracker

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// presenceEnv is a tracker of node "n1" over an in-memory replicator
// running the real partition state machine. One clock, nowMs, is both the
// leader's (stamped into commands) and the tracker's.
type presenceEnv struct {
	rep   *statetest.Replicator
	p     *Tracker
	nowMs int64
}

// leaderClock applies commands with the env's clock as the leader time.
type leaderClock struct{ e *presenceEnv }

func (l leaderClock) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	meta.TimeMs = l.e.nowMs
	switch cmd[0] {
	case presence.Tag:
		return presence.StateMachine{}.Apply(w, meta, cmd)
	case chat.Tag:
		return chat.StateMachine{}.Apply(w, meta, cmd)
	}
	return nil, fmt.Errorf("no domain %q in this test", cmd[0])
}

func newPresenceEnv(t *testing.T, ttl time.Duration) *presenceEnv {
	t.Helper()
	e := &presenceEnv{nowMs: 1_000_000}
	e.rep = statetest.NewReplicator(4, leaderClock{e})
	e.p = New("n1", ttl, e.rep, func(uint64) bool { return true }, slog.New(slog.DiscardHandler))
	e.p.now = func() time.Time { return time.UnixMilli(e.nowMs) }
	return e
}

func (e *presenceEnv) online(t *testing.T) []string {
	t.Helper()
	users, err := e.p.OnlineUsers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return users
}

func (e *presenceEnv) mustOnline(t *testing.T, want ...string) {
	t.Helper()
	if got := e.online(t); !(len(got) == 0 && len(want) == 0) && !reflect.DeepEqual(got, want) {
		t.Fatalf("online = %q, want %q", got, want)
	}
}

func (e *presenceEnv) flush(t *testing.T, all bool) {
	t.Helper()
	if err := e.p.flush(context.Background(), all); err != nil {
		t.Fatal(err)
	}
}

func (e *presenceEnv) leases(t *testing.T) []presence.Lease {
	t.Helper()
	var all []presence.Lease
	for _, q := range e.rep.Partitions() {
		if _, err := e.rep.Read(context.Background(), q, true, func(r state.Reader) error {
			l, err := presence.Leases(r)
			all = append(all, l...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

func TestTracker_ConnectedAndReleased(t *testing.T) {
	e := newPresenceEnv(t, 10*time.Second)
	e.mustOnline(t)
	r1 := e.p.Connected("Alice")
	r2 := e.p.Connected("alice") // a second tab, other spelling
	rb := e.p.Connected("bob")
	e.flush(t, false)
	e.mustOnline(t, "Alice", "bob")

	r1()
	r1() // a second call does nothing
	e.flush(t, false)
	e.mustOnline(t, "Alice", "bob")
	r2()
	e.flush(t, false)
	e.mustOnline(t, "bob")

	// A quick reconnect between two flushes keeps the lease.
	rb()
	rb = e.p.Connected("bob")
	e.flush(t, false)
	e.mustOnline(t, "bob")
	on, err := e.p.Online(context.Background(), []string{"BOB", "alice", "nobody"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"BOB": true, "alice": false, "nobody": false}; !reflect.DeepEqual(on, want) {
		t.Fatalf("Online = %v, want %v", on, want)
	}
	rb()
}

func TestTracker_RenewalKeepsLeasesAndDeadNodeExpires(t *testing.T) {
	e := newPresenceEnv(t, 3*time.Second)
	e.p.Connected("alice")
	e.flush(t, false)
	first := e.leases(t)
	// A renewal in time keeps the lease.
	e.nowMs += 2000
	e.flush(t, true)
	e.nowMs += 2000
	e.mustOnline(t, "alice")
	// Renewals only happen in full flushes; without them the lease runs
	// out, as when the node dies: offline within TTL + Grace.
	e.nowMs += 1000 + presence.Grace.Milliseconds()
	e.mustOnline(t)
	e.flush(t, true)
	e.mustOnline(t, "alice")
	if again := e.leases(t); len(again) != 1 || again[0].ExpiresMs <= first[0].ExpiresMs {
		t.Fatalf("leases after renewal %+v, before %+v", again, first)
	}
}

func TestTracker_FailedReleaseIsRetried(t *testing.T) {
	e := newPresenceEnv(t, 10*time.Second)
	release := e.p.Connected("alice")
	e.flush(t, false)
	release()
	e.rep.SetErr(errs.New(errs.Unavailable, "no leader"))
	if err := e.p.flush(context.Background(), false); err == nil {
		t.Fatal("flush with the partition unavailable succeeded")
	}
	e.rep.SetErr(nil)
	e.mustOnline(t, "alice")
	e.flush(t, false)
	e.mustOnline(t)
}

func TestTracker_ManyUsersAcrossCommands(t *testing.T) {
	e := newPresenceEnv(t, 10*time.Second)
	n := 2*maxPresenceUsers + 10
	for i := range n {
		e.p.Connected(fmt.Sprintf("user%05d", i))
	}
	e.flush(t, false)
	if got := len(e.online(t)); got != n {
		t.Fatalf("%d users online, want %d", got, n)
	}
}

func TestTracker_ExpireDropsOnlyExpiredLeases(t *testing.T) {
	e := newPresenceEnv(t, 2*time.Second)
	e.p.Connected("alice")
	e.p.Connected("bob")
	e.flush(t, false)
	e.nowMs += 2000 // alice's and bob's leases run out now
	e.p.Connected("carol")
	e.flush(t, false)
	if err := e.p.expire(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := e.leases(t)
	if want := []presence.Lease{{User: "carol", Node: "n1", ExpiresMs: e.nowMs + 2000}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("leases after expire = %+v, want %+v", got, want)
	}
}

func TestTracker_RunProposesOnConnect(t *testing.T) {
	e := newPresenceEnv(t, time.Hour) // no periodic renewal during the test
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	release := e.p.Connected("alice")
	poll.Until(t, 10*time.Second, "alice online", func() bool { return len(e.online(t)) == 1 })
	release()
	poll.Until(t, 10*time.Second, "alice offline", func() bool { return len(e.online(t)) == 0 })
}

func TestRooms_FillsOnline(t *testing.T) {
	e := newPresenceEnv(t, 10*time.Second)
	ctx := context.Background()
	rooms := chat.NewService(e.rep, chat.Config{Hasher: passwordtest.Hasher()})
	if _, err := rooms.Create(ctx, "alice", chat.CreateRequest{Name: "Lobby"}, ""); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"Bob", "carol"} {
		if _, err := rooms.Join(ctx, u, "lobby", "", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rooms.Create(ctx, "dave", chat.CreateRequest{Name: "empty-ish"}, ""); err != nil {
		t.Fatal(err)
	}
	pr := e.p.WithRooms(rooms)
	e.p.Connected("alice")
	e.p.Connected("bob")
	e.flush(t, false)

	members, _, err := pr.Members(ctx, "alice", "lobby", false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range members {
		got[m.Username] = m.Online
	}
	if want := map[string]bool{"alice": true, "Bob": true, "carol": false}; !reflect.DeepEqual(got, want) {
		t.Fatalf("members online = %v, want %v", got, want)
	}
	list, _, err := pr.List(ctx, "carol", false)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range list {
		counts[r.Name] = r.Online
	}
	if want := map[string]int{"lobby": 2, "empty-ish": 0}; !reflect.DeepEqual(counts, want) {
		t.Fatalf("online counts = %v, want %v", counts, want)
	}
	rp, err := e.p.RoomPresence(ctx, "LOBBY")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rp, got) {
		t.Fatalf("RoomPresence = %v, want %v", rp, got)
	}
}
