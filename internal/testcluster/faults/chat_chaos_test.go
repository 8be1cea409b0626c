package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// scaledKills is the share of chaosKills a workload test uses: a few kills
// in CI, ten times more with -tags chaos, PARLEY_CHAOS_KILLS/div when set.
func scaledKills(div int) int { return max(1, chaosKills()/div) }

// newChaosCluster starts the 3-node cluster the chaos tests run on, with
// the login rate limit out of the way. Kill closes a node, so what it wrote
// stays in the OS's files: NoSync costs no acknowledged write here.
func newChaosCluster(t *testing.T, partitions int) *testcluster.Cluster {
	t.Helper()
	return testcluster.New(t, testcluster.Options{
		Nodes: 3, Partitions: partitions, NoSync: true,
		Configure: func(_ int, cfg *config.Config) { cfg.RateLimit = 1 << 20 },
	})
}

// killLeaders kills the leader of a random one of the partitions (a random
// node when it has none) kills times, restarting each victim before the
// next kill, so a majority of every partition is always up or coming back.
// It returns how many kills it made.
func killLeaders(t *testing.T, c *testcluster.Cluster, seed uint64, partitions []uint64, kills int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	for k := 0; k < kills; k++ {
		victim := c.LeaderOf(partitions[rng.IntN(len(partitions))])
		if victim < 0 {
			victim = rng.IntN(c.Len())
		}
		c.Kill(victim)
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		c.Restart(victim)
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
	}
	return kills
}

// retryAcrossNodes runs call through node start, then the next node, and
// so on, until it succeeds, fails with an error that retrying cannot fix
// (fatal returns true), or giveUp passes. Every attempt is the same request
// with the same idempotency key, so at most one of them takes effect. It
// returns the last error and how many attempts failed.
func retryAcrossNodes(nodes, start int, giveUp time.Time, fatal func(error) bool, call func(ctx context.Context, node int) error) (err error, failed int) {
	for i := start; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err = call(ctx, i%nodes)
		cancel()
		if err == nil || fatal(err) || time.Now().After(giveUp) {
			return err, failed
		}
		failed++
		time.Sleep(50 * time.Millisecond)
	}
}

// refused reports an error a retry cannot fix: a 4xx other than 401 (a
// node that has not yet caught up on sessions), 408, 409 and 429.
func refused(err error) bool {
	var ce *client.Error
	if !errors.As(err, &ce) {
		return false
	}
	switch ce.Status {
	case 401, 408, 429:
		return false
	}
	return ce.Status >= 400 && ce.Status < 500
}

// chatPost is one post of the chat chaos workload.
type chatPost struct {
	room, sender, text string
	to                 []string // whisper recipients
	seq                uint64   // acknowledged seq; 0 when never acknowledged
}

// Twenty clients post to ten rooms with idempotency keys, retrying through
// other nodes on any error, while partition leaders are killed. Afterwards
// every node serves every room's history gap-free and identical; every
// acknowledged post is in it exactly once at its acknowledged seq; posts
// never acknowledged appear at most once; nothing else appears; and every
// whisper is a hidden event for members who are neither sender nor
// recipient.
func TestChaos_ChatUnderLeaderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const nodes, partitions, clients, rooms = 3, 8, 20, 10
	users := []string{"ann", "ben", "cat", "dan", "eve"}
	c := newChaosCluster(t, partitions)
	start := time.Now()

	byUser := map[string][]*client.Client{} // a client per node for each user
	for i, u := range users {
		testcluster.SignUp(t, c, i%nodes, 0, u)
		for n := 0; n < nodes; n++ {
			byUser[u] = append(byUser[u], testcluster.SignIn(t, c, n, u))
		}
	}
	roomNames := make([]string, rooms)
	parts := map[uint64]bool{}
	for r := range roomNames {
		roomNames[r] = fmt.Sprintf("room%d", r)
		if _, err := byUser[users[0]][r%nodes].CreateRoom(testcluster.StepContext(t), client.RoomSpec{Name: roomNames[r]}); err != nil {
			t.Fatalf("create %s: %v", roomNames[r], err)
		}
		for _, u := range users[1:] {
			if _, err := byUser[u][r%nodes].JoinRoom(testcluster.StepContext(t), roomNames[r], ""); err != nil {
				t.Fatalf("%s joins %s: %v", u, roomNames[r], err)
			}
		}
		parts[c.Node(0).Router().PartitionOf(roomNames[r])] = true
	}
	var partList []uint64
	for p := range parts {
		partList = append(partList, p)
	}
	slices.Sort(partList)

	var (
		mu       sync.Mutex
		posts    []*chatPost
		retries  atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		problems = make(chan error, clients)
	)
	for cl := 0; cl < clients; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cl), 11))
			user := users[cl%len(users)]
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				p := &chatPost{room: roomNames[rng.IntN(rooms)], sender: user, text: fmt.Sprintf("c%d-%d", cl, n)}
				if rng.IntN(4) == 0 {
					p.to = []string{users[(cl+1+rng.IntN(len(users)-2))%len(users)]}
				}
				key := fmt.Sprintf("post-%d-%d", cl, n)
				err, failed := retryAcrossNodes(nodes, rng.IntN(nodes), time.Now().Add(60*time.Second), refused,
					func(ctx context.Context, node int) error {
						res, err := byUser[user][node].Post(client.WithIdempotencyKey(ctx, key), p.room, p.text, client.PostOptions{To: p.to})
						p.seq = res.Seq
						return err
					})
				retries.Add(int64(failed))
				mu.Lock()
				posts = append(posts, p)
				mu.Unlock()
				if err != nil {
					p.seq = 0
					if refused(err) {
						problems <- fmt.Errorf("post %s to %s refused: %w", p.text, p.room, err)
						return
					}
				}
			}
		}(cl)
	}
	kills := killLeaders(t, c, 99, partList, scaledKills(4))
	close(stop)
	wg.Wait()
	close(problems)
	for err := range problems {
		t.Error(err)
	}
	c.VerifyReplicas(30 * time.Second)

	acked := 0
	for _, p := range posts {
		if p.seq != 0 {
			acked++
		}
	}
	for r, room := range roomNames {
		views := map[string][]client.Event{}
		for _, u := range users {
			for n := 0; n < nodes; n++ {
				events := fullHistory(t, byUser[u][n], room)
				if prev, ok := views[u]; ok && !slices.EqualFunc(prev, events, sameEvent) {
					t.Fatalf("%s: %s's history differs between nodes:\n n1: %s\n n%d: %s", room, u, testcluster.FormatSeqs(prev), n+1, testcluster.FormatSeqs(events))
				}
				views[u] = events
			}
		}
		checkRoomHistory(t, room, users, views, posts)
		if r == 0 {
			t.Logf("%s: %d events", room, len(views[users[0]]))
		}
	}
	t.Logf("%d posts (%d acknowledged, %d failed attempts retried), %d leader kills, %v",
		len(posts), acked, retries.Load(), kills, time.Since(start).Round(time.Second))
}

// sameEvent compares two events field by field.
func sameEvent(a, b client.Event) bool {
	return a.Room == b.Room && a.Seq == b.Seq && a.Ts == b.Ts && a.Kind == b.Kind &&
		a.Sender == b.Sender && a.Text == b.Text && slices.Equal(a.To, b.To)
}

// fullHistory reads a room's whole history through cl, page by page.
func fullHistory(t *testing.T, cl *client.Client, room string) []client.Event {
	t.Helper()
	var all []client.Event
	after := uint64(0)
	for {
		var page []client.Event
		err, _ := retryAcrossNodes(1, 0, time.Now().Add(30*time.Second), refused, func(ctx context.Context, _ int) error {
			var err error
			page, err = cl.History(ctx, room, client.HistoryOptions{After: after, HasAfter: true, Limit: 500})
			return err
		})
		if err != nil {
			t.Fatalf("history of %s after %d: %v", room, after, err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
}

// checkRoomHistory checks each user's view of one room against the posts.
func checkRoomHistory(t *testing.T, room string, users []string, views map[string][]client.Event, posts []*chatPost) {
	t.Helper()
	byText := map[string]*chatPost{}
	for _, p := range posts {
		if p.room == room {
			byText[p.text] = p
		}
	}
	full := views[users[0]]
	for _, u := range users {
		v := views[u]
		if len(v) != len(full) {
			t.Fatalf("%s: %s sees %d events, %s sees %d", room, u, len(v), users[0], len(full))
		}
		for i, e := range v {
			if e.Seq != uint64(i+1) {
				t.Fatalf("%s: %s's event %d has seq %d: not gap-free from 1: %s", room, u, i, e.Seq, testcluster.FormatSeqs(v))
			}
		}
	}
	// The full event at each seq: from a user who sees it.
	seen := map[string]uint64{}
	for i := range full {
		var ev client.Event
		for _, u := range users {
			if e := views[u][i]; e.Kind != "hidden" {
				ev = e
				break
			}
		}
		switch ev.Kind {
		case "join", "leave":
			continue
		case "message", "whisper":
		default:
			t.Fatalf("%s seq %d: no user sees the event (%q)", room, i+1, ev.Kind)
		}
		p, ok := byText[ev.Text]
		if !ok {
			t.Fatalf("%s seq %d: unexpected message %q from %s", room, ev.Seq, ev.Text, ev.Sender)
		}
		if prev, dup := seen[ev.Text]; dup {
			t.Fatalf("%s: %q appears twice, at seq %d and %d", room, ev.Text, prev, ev.Seq)
		}
		seen[ev.Text] = ev.Seq
		if ev.Sender != p.sender || !slices.Equal(ev.To, p.to) || (ev.Kind == "whisper") != (len(p.to) > 0) {
			t.Fatalf("%s seq %d: %+v, posted %+v", room, ev.Seq, ev, *p)
		}
		for _, u := range users {
			e := views[u][i]
			involved := u == p.sender || slices.Contains(p.to, u)
			switch {
			case len(p.to) == 0 || involved:
				if !sameEvent(e, ev) {
					t.Fatalf("%s seq %d: %s sees %+v, want %+v", room, ev.Seq, u, e, ev)
				}
			case e.Kind != "hidden" || e.Text != "" || e.Sender != "" || len(e.To) > 0 || e.Ts != ev.Ts:
				t.Fatalf("%s seq %d: whisper from %s to %v leaks to %s as %+v", room, ev.Seq, p.sender, p.to, u, e)
			}
		}
	}
	for text, p := range byText {
		at, ok := seen[text]
		switch {
		case p.seq != 0 && !ok:
			t.Fatalf("%s: acknowledged post %q (seq %d) is missing", room, text, p.seq)
		case p.seq != 0 && at != p.seq:
			t.Fatalf("%s: post %q acknowledged with seq %d is at seq %d", room, text, p.seq, at)
		}
	}
}
