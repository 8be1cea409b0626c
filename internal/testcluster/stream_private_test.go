package testcluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// A public room read live by someone who is not a member turns private:
// what is posted after never reaches that reader (its connection resets as
// a slow consumer and subscribing again is refused), while a member who
// resumes gets it.
func TestStream_RoomTurnsPrivate(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		const room = "openhouse"
		ctx := apiCtx(t)
		alice, bob, _ := streamRoom(t, c, room)
		dave := signUp(t, c, 0, 0, "dave")
		last := c.Len() - 1
		outsider := openStream(t, c, last, dave, client.StreamOptions{Rooms: []string{room}})
		member := openStream(t, c, last, bob, client.StreamOptions{Rooms: []string{room}})
		outsider.waitReady(t, room)
		member.waitReady(t, room)
		res, err := alice.Post(ctx, room, "still public", client.PostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		outsider.waitSeq(t, room, res.Seq)
		member.waitSeq(t, room, res.Seq)

		invite := "invite"
		if _, err := alice.UpdateRoomSettings(ctx, room, client.RoomSettings{Access: &invite}); err != nil {
			t.Fatal(err)
		}
		secret, err := alice.Post(ctx, room, "members only from now on", client.PostOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for who, r := range map[string]*streamReader{"dave": outsider, "bob": member} {
			poll.Until(t, 20*time.Second, who+"'s stream reset", func() error {
				fs, err := r.snapshot()
				for _, f := range fs {
					if f.Type == client.FrameError && f.Code == client.CodeSlowConsumer {
						return nil
					}
				}
				if err != nil {
					return nil // closed after the error frame
				}
				return testcluster.ErrNotYet
			})
		}
		fs, _ := outsider.snapshot()
		for _, f := range fs {
			if f.Type == client.FrameEvent && strings.Contains(f.Event().Text, "members only") {
				t.Fatalf("dave, not a member, got the post made after the room turned private: %s", fmtFrames(fs))
			}
		}

		again := openStream(t, c, last, dave, client.StreamOptions{Resume: map[string]uint64{room: res.Seq}})
		poll.Until(t, 20*time.Second, "dave refused on subscribing again", func() error {
			fs, err := again.snapshot()
			for _, f := range fs {
				if f.Type == client.FrameError && f.Room == room && f.Code == "forbidden" {
					return nil
				}
				if f.Type == client.FrameEvent && f.Room == room && f.Seq >= secret.Seq {
					return fmt.Errorf("dave got seq %d after subscribing again", f.Seq)
				}
			}
			if err != nil {
				return err
			}
			return testcluster.ErrNotYet
		})
		resumed := openStream(t, c, last, bob, client.StreamOptions{Resume: map[string]uint64{room: res.Seq}})
		resumed.waitSeq(t, room, secret.Seq)
	})
}
