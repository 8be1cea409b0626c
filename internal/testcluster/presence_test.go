package testcluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// presenceTTL is the lease of the presence test cluster: short, so a dead
// node's users go offline in a few seconds instead of twelve.
const presenceTTL = 3 * time.Second

// presenceView is what one node tells alice about presence.
type presenceView struct {
	online      []string
	memberFlags map[string]bool // room "hall"
	hallOnline  int             // the rooms list's count for "hall"
}

func viewFrom(t *testing.T, cl *client.Client) (presenceView, error) {
	ctx := apiCtx(t)
	var v presenceView
	var err error
	if v.online, err = cl.OnlineUsers(ctx); err != nil {
		return v, err
	}
	members, err := cl.Members(ctx, "hall")
	if err != nil {
		return v, err
	}
	v.memberFlags = map[string]bool{}
	for _, m := range members {
		v.memberFlags[m.Username] = m.Online
	}
	rooms, err := cl.ListRooms(ctx)
	if err != nil {
		return v, err
	}
	for _, r := range rooms {
		if r.Name == "hall" {
			v.hallOnline = r.Online
		}
	}
	return v, nil
}

// expectEverywhere polls every live node until each shows bob online (or
// offline) in all three places, and returns how long that took.
func expectEverywhere(t *testing.T, c *testcluster.Cluster, viewers map[int]*client.Client, bobOnline bool, within time.Duration) time.Duration {
	t.Helper()
	want := presenceView{memberFlags: map[string]bool{"alice": false, "bob": bobOnline}}
	if bobOnline {
		want.online, want.hallOnline = []string{"bob"}, 1
	}
	return poll.Until(t, within, fmt.Sprintf("bob online=%v on every node", bobOnline), func() error {
		for i, cl := range viewers {
			v, err := viewFrom(t, cl)
			if err != nil {
				return fmt.Errorf("n%d: %w", i+1, err)
			}
			if !slices.Equal(v.online, want.online) || v.hallOnline != want.hallOnline || fmt.Sprint(v.memberFlags) != fmt.Sprint(want.memberFlags) {
				return fmt.Errorf("n%d shows %+v, want %+v", i+1, v, want)
			}
		}
		return nil
	})
}

func TestCluster_Presence(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	// 4 nodes, RF 3: some nodes hold no replica of a user's partition, so
	// renewals and reads go through forwarding.
	c := testcluster.New(t, testcluster.Options{
		Nodes: 4, ReplicationFactor: 3, NoSync: true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.PresenceTTL = presenceTTL
		},
	})
	alice := signUp(t, c, 0, 0, "alice")
	signUp(t, c, 1, 1, "bob")
	if _, err := alice.CreateRoom(apiCtx(t), client.RoomSpec{Name: "hall"}); err != nil {
		t.Fatal(err)
	}
	if _, err := signIn(t, c, 2, "bob").JoinRoom(apiCtx(t), "hall", ""); err != nil {
		t.Fatal(err)
	}
	viewers := map[int]*client.Client{}
	for i := range c.Len() {
		viewers[i] = as(c, i, alice)
	}
	expectEverywhere(t, c, viewers, false, 10*time.Second)

	const holder = 3 // the node holding bob's connections
	t.Run("connected and released", func(t *testing.T) {
		release := c.Node(holder).Presence().Connected("bob")
		expectEverywhere(t, c, viewers, true, 10*time.Second)
		// Several renewals later bob is still online.
		time.Sleep(2 * presenceTTL)
		expectEverywhere(t, c, viewers, true, 10*time.Second)
		release()
		expectEverywhere(t, c, viewers, false, 10*time.Second)
	})
	t.Run("holder killed", func(t *testing.T) {
		c.Node(holder).Presence().Connected("bob")
		expectEverywhere(t, c, viewers, true, 10*time.Second)
		c.Kill(holder)
		delete(viewers, holder)
		took := expectEverywhere(t, c, viewers, false, 15*time.Second)
		t.Logf("bob offline on every live node %v after his node died (TTL %v)", took.Round(10*time.Millisecond), presenceTTL)
	})
}

// A node that shuts down gracefully (SIGTERM) ends the leases of the users
// connected through it: they show offline at once on every other node, not
// when the lease (here a minute) runs out.
func TestCluster_PresenceReleasedOnShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, NoSync: true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.PresenceTTL = time.Minute
		},
	})
	alice := signUp(t, c, 0, 0, "alice")
	signUp(t, c, 1, 1, "bob")
	if _, err := alice.CreateRoom(apiCtx(t), client.RoomSpec{Name: "hall"}); err != nil {
		t.Fatal(err)
	}
	if _, err := signIn(t, c, 1, "bob").JoinRoom(apiCtx(t), "hall", ""); err != nil {
		t.Fatal(err)
	}
	viewers := map[int]*client.Client{0: as(c, 0, alice), 1: as(c, 1, alice)}
	const holder = 2
	c.Node(holder).Presence().Connected("bob")
	expectEverywhere(t, c, viewers, true, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Node(holder).Shutdown(ctx)
	expectEverywhere(t, c, viewers, false, 15*time.Second)
}
