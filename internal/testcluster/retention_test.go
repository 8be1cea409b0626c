package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/testcluster"
)

// A room's own retention is replicated state: the compaction that the
// leader of the room's partition proposes on its interval removes the
// messages beyond the room's retention_messages from every replica's
// store, a reader resuming from before them gets history_compacted, and a
// room of the same partition under legal hold keeps everything until the
// hold is lifted.
func TestRetention_PerRoomRemovesFromEveryReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, ReplicationFactor: 3, NoSync: true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.HistoryCompactInterval = 50 * time.Millisecond
		}})
	admin := signUpAdmin(t, c, 0, "root")
	olga := signUp(t, c, 0, 1, "olga")
	waitProtocol(t, c, chat.RetentionProtocol)

	// Two rooms in one partition: every compaction of the partition visits
	// the held room ("held-…" sorts first) before it reaches "short".
	const short = "short"
	p := c.Node(0).Router().PartitionOf(short)
	held := ""
	for i := 0; held == ""; i++ {
		if name := fmt.Sprintf("held-%d", i); c.Node(0).Router().PartitionOf(name) == p {
			held = name
		}
	}
	const keep, posts = 3, 8
	must := func(what string, call func(ctx context.Context) error) {
		t.Helper()
		if err := retrying(t, what, call); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	n := int64(keep)
	for _, room := range []string{held, short} {
		must("create "+room, func(ctx context.Context) error {
			_, err := olga.CreateRoom(ctx, client.RoomSpec{Name: room})
			return err
		})
		must("retention of "+room, func(ctx context.Context) error {
			_, err := olga.UpdateRoomSettings(ctx, room, client.RoomSettings{RetentionMessages: &n})
			return err
		})
	}
	must("hold", func(ctx context.Context) error {
		r, err := admin.SetLegalHold(ctx, held, false)
		if err == nil && !r.LegalHold {
			err = errors.New("the room is not held")
		}
		return err
	})
	texts := map[string][]string{}
	for _, room := range []string{held, short} {
		for i := range posts {
			text := fmt.Sprintf("%s message %d", room, i)
			texts[room] = append(texts[room], text)
			must("post", func(ctx context.Context) error {
				_, err := as(c, i%c.Len(), olga).Post(ctx, room, text, client.PostOptions{})
				return err
			})
		}
	}

	gone := texts[short][:posts-keep]
	waitStores(t, c, p, "the expired messages of "+short+" gone", gone, append(texts[held], texts[short][posts-keep:]...))

	r, err := as(c, 2, olga).GetRoom(apiCtx(t), short)
	if err != nil {
		t.Fatal(err)
	}
	// seq 1 the creator's join, 2 the settings, 3.. the posts.
	if want := uint64(2 + posts - keep + 1); r.FirstRetainedSeq != want || r.RetentionMessages != keep {
		t.Fatalf("room %+v, want first retained seq %d", r, want)
	}
	_, err = as(c, 1, olga).History(apiCtx(t), short, client.HistoryOptions{After: 1, HasAfter: true})
	mustStatus(t, err, 410, "history_compacted")
	page, err := as(c, 1, olga).History(apiCtx(t), short, client.HistoryOptions{})
	if err != nil || len(page) != keep || page[0].Text != texts[short][posts-keep] {
		t.Fatalf("latest page %s (%v), want the newest %d messages", fmtSeqs(page), err, keep)
	}

	must("lift", func(ctx context.Context) error { _, err := admin.SetLegalHold(ctx, held, true); return err })
	waitStores(t, c, p, "the held room compacted once the hold is lifted", texts[held][:posts-keep], texts[held][posts-keep:])

	poll.Until(t, 30*time.Second, "identical replicas", func() error {
		rep, err := admin.Verify(apiCtx(t))
		if err != nil {
			return err
		}
		if rep.Mismatches != 0 || rep.Unverified != 0 {
			return fmt.Errorf("%d mismatches, %d unverified", rep.Mismatches, rep.Unverified)
		}
		return nil
	})
}

// waitStores waits until the store of every replica of partition p holds
// none of the texts gone and every one of the texts kept.
func waitStores(t *testing.T, c *testcluster.Cluster, p uint64, what string, gone, kept []string) {
	t.Helper()
	checked := 0
	for i := 0; i < c.Len(); i++ {
		if !c.Node(i).Engine().HasGroup(p) {
			continue
		}
		checked++
		poll.Until(t, 30*time.Second, fmt.Sprintf("n%d: %s", i+1, what), func() error {
			seen := map[string]bool{}
			_, fnErr, err := c.Node(i).Router().ReadLocal(apiCtx(t), p, false, func(r state.Reader) error {
				return r.Scan(nil, nil, func(_, v []byte) bool {
					for _, text := range append(gone, kept...) {
						if strings.Contains(string(v), text) {
							seen[text] = true
						}
					}
					return true
				})
			})
			if err := errors.Join(err, fnErr); err != nil {
				return err
			}
			for _, text := range gone {
				if seen[text] {
					return fmt.Errorf("still stores %q", text)
				}
			}
			for _, text := range kept {
				if !seen[text] {
					return fmt.Errorf("lost %q", text)
				}
			}
			return nil
		})
	}
	if checked != c.Len() {
		t.Fatalf("%d of %d nodes hold partition %d", checked, c.Len(), p)
	}
}
