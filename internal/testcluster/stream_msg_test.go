package testcluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/testcluster"
)

// changeLoad posts, edits, reacts, replies, pins and deletes in room as
// alice and bob through the nodes in turn (never skip), count steps, and
// returns the last seq and the texts it deleted.
func changeLoad(t *testing.T, c *testcluster.Cluster, skip int, alice, bob *client.Client, room string, count int) (last uint64, deleted []string) {
	nodes := []int{}
	for i := 0; i < c.Len(); i++ {
		if i != skip {
			nodes = append(nodes, i)
		}
	}
	var mine []uint64 // alice's live messages
	for i := range count {
		ctx, at := apiCtx(t), nodes[i%len(nodes)]
		a, b := as(c, at, alice), as(c, at, bob)
		var seq uint64
		var err error
		var res client.ChangeResult
		switch {
		case i%6 == 0 || len(mine) < 2:
			var p client.PostResult
			text := fmt.Sprintf("secret-%d for @bob", i)
			if p, err = a.Post(ctx, room, text, client.PostOptions{}); err == nil {
				mine, seq = append(mine, p.Seq), p.Seq
			}
		case i%6 == 1:
			res, err = a.Edit(ctx, room, mine[len(mine)-1], fmt.Sprintf("secret-%d edited", i))
		case i%6 == 2:
			res, err = b.React(ctx, room, mine[len(mine)-1], []string{"👍", ":tada:"}[i%2])
		case i%6 == 3:
			var p client.PostResult
			if p, err = b.Post(ctx, room, fmt.Sprintf("reply %d", i), client.PostOptions{ReplyTo: mine[0]}); err == nil {
				seq = p.Seq
			}
		case i%6 == 4:
			res, err = b.Pin(ctx, room, mine[len(mine)-1])
		default:
			victim := mine[len(mine)-2]
			var m client.Event
			if m, err = a.Message(ctx, room, victim); err == nil {
				deleted = append(deleted, m.Text)
				res, err = a.DeleteMessage(ctx, room, victim)
				mine = append(mine[:len(mine)-2], mine[len(mine)-1])
			}
		}
		if err != nil {
			t.Errorf("step %d on n%d: %v", i, at+1, err)
			return last, deleted
		}
		last = max(last, seq, res.Seq)
	}
	return last, deleted
}

// replay applies a stream's events to the messages they describe: each
// change carries its target as it was read, so the last one wins.
func replay(events []client.Event) map[uint64]client.Event {
	msgs := map[uint64]client.Event{}
	for _, e := range events {
		switch {
		case e.Kind == "message" || e.Kind == "whisper":
			msgs[e.Seq] = e
			if e.ReplyTo != 0 && e.Message != nil {
				msgs[e.ReplyTo] = *e.Message
			}
		case e.Target != 0 && e.Message != nil:
			msgs[e.Target] = *e.Message
		}
	}
	return msgs
}

// Edits, deletes, reactions, pins and thread replies are events like posts:
// a subscriber whose node dies resumes elsewhere with every one of them,
// in order, none twice; replaying them gives the messages history shows; a
// deleted text is in no replica's state; replicas stay identical; and the
// mentioned user's connections (subscribed to nothing) get mention frames.
func TestStream_MessageChanges(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		const room = "changes"
		alice, bob, carol := streamRoom(t, c, room)
		victim := c.Len() - 1
		if far := noReplica(c, room); far > 0 {
			victim = far
		}
		first := openStream(t, c, victim, carol, client.StreamOptions{Rooms: []string{room}})
		ready := first.waitReady(t, room)
		bobs := openStream(t, c, 0, bob, client.StreamOptions{})

		type result struct {
			last    uint64
			deleted []string
		}
		done := make(chan result, 1)
		go func() {
			last, deleted := changeLoad(t, c, victim, alice, bob, room, 60)
			done <- result{last, deleted}
		}()
		first.waitSeq(t, room, ready+10)
		c.Kill(victim)
		<-first.done
		seen, _ := first.snapshot()
		second := openStream(t, c, (victim+1)%c.Len(), carol, client.StreamOptions{Resume: first.s.Positions()})
		res := <-done
		if t.Failed() {
			return
		}
		all := append(eventsOf(seen, room), eventsOf(second.waitSeq(t, room, res.last), room)...)
		mustRun(t, "across the kill", all, ready+1, res.last)

		hist, err := as(c, 0, carol).History(apiCtx(t), room, client.HistoryOptions{HasAfter: true, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		got := replay(all)
		kinds := map[string]int{}
		for _, e := range all {
			kinds[e.Kind]++
		}
		for _, want := range hist {
			if want.Kind != "message" || want.Seq <= ready {
				continue
			}
			g := got[want.Seq]
			if g.Text != want.Text || g.Deleted != want.Deleted || g.EditedAt != want.EditedAt || g.Pinned != want.Pinned ||
				g.ReplyCount != want.ReplyCount || len(g.Reactions) != len(want.Reactions) {
				t.Fatalf("message %d replayed from the stream as %+v, history has %+v", want.Seq, g, want)
			}
		}
		for _, k := range []string{"message", "edit", "react", "pin", "delete"} {
			if kinds[k] == 0 {
				t.Fatalf("no %s event among %v", k, kinds)
			}
		}

		c.Restart(victim)
		c.WaitConverged(60 * time.Second)
		t.Run("deleted text is in no replica", func(t *testing.T) {
			p := c.Node(0).Router().PartitionOf(room)
			checked := 0
			for i := 0; i < c.Len(); i++ {
				if !c.Node(i).Engine().HasGroup(p) {
					continue
				}
				checked++
				// A replica that was down may still be catching up.
				poll.Until(t, 30*time.Second, fmt.Sprintf("n%d without the deleted texts", i+1), func() error {
					var found error
					_, fnErr, err := c.Node(i).Router().ReadLocal(apiCtx(t), p, false, func(r state.Reader) error {
						return r.Scan(nil, nil, func(k, v []byte) bool {
							for _, text := range res.deleted {
								if strings.Contains(string(v), text) {
									found = fmt.Errorf("stores %q under %q", text, k)
									return false
								}
							}
							return true
						})
					})
					return errors.Join(err, fnErr, found)
				})
			}
			if checked < 3 || len(res.deleted) == 0 {
				t.Fatalf("checked %d replicas for %d deleted texts", checked, len(res.deleted))
			}
		})
		t.Run("cluster verify", func(t *testing.T) {
			poll.Until(t, 30*time.Second, "identical replicas", func() error {
				rep, err := as(c, 0, alice).Verify(apiCtx(t))
				if err != nil {
					return err
				}
				if rep.Mismatches != 0 || rep.Unverified != 0 {
					return fmt.Errorf("%d mismatches, %d unverified", rep.Mismatches, rep.Unverified)
				}
				return nil
			})
		})
		t.Run("mention frames", func(t *testing.T) {
			poll.Until(t, 20*time.Second, "a mention frame", func() error {
				fs, _ := bobs.snapshot()
				for _, f := range fs {
					if f.Type == client.FrameMention && f.Room == room && f.Sender == "alice" && f.Seq > ready {
						return nil
					}
				}
				return fmt.Errorf("frames %s", fmtFrames(fs))
			})
		})
	})
}
