package membership

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/parley-chat/parley/internal/poll"
)

// newMember starts a member on a free 127.0.0.1 port with fast timings.
func newMember(t *testing.T, id, cluster string, join []string, events int) *Membership {
	t.Helper()
	m, err := New(Config{
		NodeID: id, ClusterID: cluster, BindAddr: "127.0.0.1:0", Join: join,
		Meta:   Meta{ClusterAddr: "127.0.0.1:7071", HTTPAddr: "127.0.0.1:7070", Zone: "z-" + id},
		Logger: slog.New(slog.DiscardHandler),

		ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 80 * time.Millisecond, SuspicionMult: 3,
		GossipInterval: 10 * time.Millisecond, PushPullInterval: 300 * time.Millisecond,
		TCPTimeout: 300 * time.Millisecond, DeadNodeReclaimTime: time.Second, EventBuffer: events,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func mustJoin(t *testing.T, m *Membership) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Join(ctx); err != nil {
		t.Fatal(err)
	}
}

// sees reports whether m sees member id in state with the given zone.
func sees(m *Membership, id string, state State, zone string) bool {
	mb, ok := m.Member(id)
	return ok && mb.State == state && mb.Meta.Zone == zone
}

func TestGossipAddr(t *testing.T) {
	cases := []struct{ in, want string }{
		{"127.0.0.1:7071", "127.0.0.1:7072"},
		{"localhost:7081", "localhost:7082"},
		{":7071", ":7072"},
		{"[::1]:9000", "[::1]:9001"},
		{"127.0.0.1:0", ""},
		{"127.0.0.1:65535", ""},
		{"127.0.0.1", ""},
		{"127.0.0.1:http", ""},
	}
	for _, c := range cases {
		got, err := GossipAddr(c.in)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("GossipAddr(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestNew_Validates(t *testing.T) {
	cases := map[string]Config{
		"no node id":    {ClusterID: "c", BindAddr: "127.0.0.1:0"},
		"no cluster id": {NodeID: "n", BindAddr: "127.0.0.1:0"},
		"bad bind":      {NodeID: "n", ClusterID: "c", BindAddr: "nowhere"},
		"meta too big":  {NodeID: "n", ClusterID: "c", BindAddr: "127.0.0.1:0", Meta: Meta{Zone: strings.Repeat("z", MaxMetaSize)}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			cfg.Logger = slog.New(slog.DiscardHandler)
			if m, err := New(cfg); err == nil {
				_ = m.Close()
				t.Fatal("accepted")
			}
		})
	}
}

// TestMembership_Pair is the quick test: two members find each other and see
// each other's metadata and updates.
func TestMembership_Pair(t *testing.T) {
	a := newMember(t, "a", "c1", nil, 0)
	b := newMember(t, "b", "c1", []string{a.Addr()}, 0)
	mustJoin(t, a) // nothing to join: returns at once
	mustJoin(t, b)
	poll.Until(t, 20*time.Second, "a and b to see each other", func() bool {
		return sees(a, "b", Alive, "z-b") && sees(b, "a", Alive, "z-a") && sees(a, "a", Alive, "z-a")
	})
	mb, _ := a.Member("b")
	if mb.Addr != b.Addr() || mb.Meta.ID != "b" || mb.Meta.HTTPAddr != "127.0.0.1:7070" || mb.Since.IsZero() {
		t.Fatalf("a sees b as %+v", mb)
	}
	if err := b.UpdateMeta(Meta{Zone: "moved", Standby: true}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "a to see b's new metadata", func() bool {
		mb, _ := a.Member("b")
		return mb.Meta.Zone == "moved" && mb.Meta.Standby && mb.Meta.ID == "b"
	})
	if got := a.Members(); len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Fatalf("members %+v", got)
	}
}

// TestMembership_Cluster runs five members: discovery through one seed,
// metadata everywhere, a failure seen as suspect then dead, a departure seen
// as left, and a foreign cluster kept out.
func TestMembership_Cluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	seed := newMember(t, "m0", "c1", nil, 0)
	ms := []*Membership{seed}
	for i := 1; i < 5; i++ {
		m := newMember(t, fmt.Sprintf("m%d", i), "c1", []string{seed.Addr()}, 0)
		mustJoin(t, m)
		ms = append(ms, m)
	}
	poll.Until(t, 20*time.Second, "everyone to see everyone with metadata", func() bool {
		for _, m := range ms {
			for _, o := range ms {
				if !sees(m, o.cfg.NodeID, Alive, "z-"+o.cfg.NodeID) {
					return false
				}
			}
		}
		return true
	})

	t.Run("foreign cluster never appears", func(t *testing.T) {
		x := newMember(t, "x", "c2", []string{seed.Addr()}, 0)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := x.Join(ctx)
		if err == nil || !strings.Contains(err.Error(), "cluster") {
			t.Fatalf("join across clusters: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
		for _, m := range ms {
			if _, ok := m.Member("x"); ok {
				t.Fatalf("%s sees the foreign member", m.cfg.NodeID)
			}
		}
		if got := x.Members(); len(got) != 1 {
			t.Fatalf("foreign member sees %+v", got)
		}
	})

	t.Run("failure is suspect then dead", func(t *testing.T) {
		victim := ms[4]
		_ = victim.Close() // no Leave: a crash
		others := ms[:4]
		poll.Until(t, 20*time.Second, "the others to see m4 dead", func() bool {
			for _, m := range others {
				if mb, _ := m.Member("m4"); mb.State != Dead {
					return false
				}
			}
			return true
		})
		// Some member's own probe failed first: it saw m4 suspect before dead.
		suspected := false
		for _, m := range others {
			seen := map[State]bool{}
			for drained := false; !drained; {
				select {
				case e := <-m.Events():
					if e.Member.ID == "m4" {
						if e.New == Dead && seen[Suspect] {
							suspected = true
						}
						seen[e.New] = true
					}
				default:
					drained = true
				}
			}
		}
		if !suspected {
			t.Fatal("no member saw m4 suspect before dead")
		}
		ms = others
	})

	t.Run("departure is left", func(t *testing.T) {
		leaver := ms[3]
		if err := leaver.Leave(time.Second); err != nil {
			t.Fatal(err)
		}
		_ = leaver.Close()
		poll.Until(t, 20*time.Second, "the others to see m3 left", func() bool {
			for _, m := range ms[:3] {
				if mb, _ := m.Member("m3"); mb.State != Left {
					return false
				}
			}
			return true
		})
		seed.Forget("m3")
		if _, ok := seed.Member("m3"); ok {
			t.Fatal("Forget kept a left member")
		}
		seed.Forget("m1")
		if _, ok := seed.Member("m1"); !ok {
			t.Fatal("Forget dropped an alive member")
		}
	})
}

// TestMembership_EventsNeverBlock fills a one-slot event buffer: gossip goes
// on, the excess is counted, and Members stays right.
func TestMembership_EventsNeverBlock(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	a := newMember(t, "a", "c1", nil, 1)
	for i := range 3 {
		mustJoin(t, newMember(t, fmt.Sprintf("b%d", i), "c1", []string{a.Addr()}, 0))
	}
	poll.Until(t, 20*time.Second, "a to see all", func() bool { return len(a.Members()) == 4 })
	if a.Dropped() == 0 {
		t.Fatal("nothing dropped from a one-slot buffer")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for range a.Events() { // closed by Close
	}
	if a.Leave(time.Second) == nil || a.UpdateMeta(Meta{}) == nil {
		t.Fatal("Leave or UpdateMeta after Close did not fail")
	}
}

func TestDelegate_RefusesForeignCluster(t *testing.T) {
	d := &delegate{m: &Membership{cfg: Config{ClusterID: "c1"}}}
	node := func(cluster string) *memberlist.Node {
		b, err := encodeMeta(wireMeta{Cluster: cluster, Meta: Meta{ID: "n"}})
		if err != nil {
			t.Fatal(err)
		}
		return &memberlist.Node{Name: "n", Meta: b}
	}
	if err := d.NotifyAlive(node("c1")); err != nil {
		t.Fatalf("own cluster refused: %v", err)
	}
	if err := d.NotifyAlive(node("c2")); err == nil {
		t.Fatal("alive message from another cluster accepted")
	}
	if err := d.NotifyMerge([]*memberlist.Node{node("c1"), node("c2")}); err == nil {
		t.Fatal("merge with another cluster accepted")
	}
	if err := d.NotifyAlive(&memberlist.Node{Name: "n", Meta: []byte("junk")}); err == nil {
		t.Fatal("undecodable metadata accepted")
	}
}

func FuzzDecodeMeta(f *testing.F) {
	b, _ := encodeMeta(wireMeta{Cluster: "c", Meta: Meta{ID: "n1", ClusterAddr: "h:1", Zone: "z", Standby: true}})
	f.Add(b)
	f.Add([]byte("{}"))
	f.Add([]byte("null"))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeMeta(b)
		if err != nil {
			return
		}
		again, err := encodeMeta(w)
		if err != nil {
			return // too big once re-encoded: refused, fine
		}
		if w2, err := decodeMeta(again); err != nil || w2 != w {
			t.Fatalf("round trip: %+v -> %+v, %v", w, w2, err)
		}
	})
}
