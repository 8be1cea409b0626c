package testcluster_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// A WebSocket connection makes its user online on every node, and the
// room's other subscribers get presence frames when the user comes and goes.
func TestStream_Presence(t *testing.T) {
	c := newAPICluster(t, 3, 3)
	ctx := apiCtx(t)
	const room = "hall"
	_, bob, carol := streamRoom(t, c, room)

	watch := openStream(t, c, 0, carol, client.StreamOptions{Rooms: []string{room}})
	watch.waitReady(t, room)
	time.Sleep(5 * time.Second) // let the node take its presence baseline with bob offline

	bobStream, err := as(c, 1, bob).Stream(ctx, client.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.Len(); i++ {
		poll.Until(t, 15*time.Second, "bob online through every node", func() error {
			users, err := as(c, i, carol).OnlineUsers(ctx)
			if err != nil {
				return err
			}
			if !slices.Contains(users, "bob") {
				return testcluster.ErrNotYet
			}
			return nil
		})
	}
	waitPresence(t, watch, "bob", true)

	_ = bobStream.Close()
	waitPresence(t, watch, "bob", false)
	users, err := as(c, 2, carol).OnlineUsers(ctx)
	if err != nil || slices.Contains(users, "bob") {
		t.Fatalf("online after bob's stream closed = %v, %v", users, err)
	}
}

// waitPresence waits for a presence frame saying user went online (or
// offline).
func waitPresence(t *testing.T, r *streamReader, user string, online bool) {
	t.Helper()
	poll.Until(t, 20*time.Second, "presence frame", func() error {
		fs, err := r.snapshot()
		for _, f := range fs {
			if f.Type == client.FramePresence && f.Username == user && f.Online == online {
				return nil
			}
		}
		if err != nil {
			return err
		}
		return testcluster.ErrNotYet
	})
}

// Deleting a room ends its subscriptions with not_found on every node,
// including those served by an upstream feed.
func TestStream_RoomDeleted(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		const room = "doomed"
		alice, bob, _ := streamRoom(t, c, room)
		var rs []*streamReader
		for i := 0; i < c.Len(); i++ {
			r := openStream(t, c, i, bob, client.StreamOptions{Rooms: []string{room}})
			r.waitReady(t, room)
			rs = append(rs, r)
		}
		if err := alice.DeleteRoom(apiCtx(t), room); err != nil {
			t.Fatal(err)
		}
		for i, r := range rs {
			poll.Until(t, 20*time.Second, fmt.Sprintf("not_found on n%d", i+1), func() error {
				fs, err := r.snapshot()
				for _, f := range fs {
					if f.Type == client.FrameError && f.Room == room && f.Code == "not_found" {
						return nil
					}
				}
				if err != nil {
					return err
				}
				return testcluster.ErrNotYet
			})
		}
	})
}
