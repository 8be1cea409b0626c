package testcluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Chat search across a cluster of 3 nodes and 4 partitions, each held by
// 2 nodes (so every node asks others for some partitions) and node 2
// keeping no index at all: a search through any node returns the same
// merged results; an edit and a delete show within a second; a whisper is
// found by its recipient, never by a third user.
func TestSearch_AcrossTheCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, ReplicationFactor: 2, NoSync: true,
		Configure: func(i int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.NoSearchIndex = i == 2
		}})
	ann := signUp(t, c, 0, 0, "ann")
	bob := signUp(t, c, 0, 1, "bob")
	cat := signUp(t, c, 0, 2, "cat")
	rooms := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
	seqs := seedSearch(t, c, rooms, ann, bob, cat)
	do := func(what string, call func(ctx context.Context) error) { mustRetrying(t, what, call) }

	everywhere := func(user *client.Client, q string, want []string) func() error {
		return searchedEverywhere(c, []int{0, 1, 2}, user, q, want)
	}
	var rockets []string
	for _, room := range rooms {
		rockets = append(rockets, fmt.Sprintf("%s/%d", room, seqs[room+"/0"]))
	}
	slices.Sort(rockets)
	poll.Until(t, 10*time.Second, "every node finds the rockets", everywhere(cat, "rocket", rockets))
	withWhisper := append(slices.Clone(rockets), "alpha/"+fmt.Sprint(seqs["alpha/1"]+1))
	slices.Sort(withWhisper)
	poll.Until(t, 5*time.Second, "bob finds the whisper too", everywhere(bob, "ROCKET", withWhisper))
	poll.Until(t, 5*time.Second, "cat never finds the whisper", everywhere(cat, `"rocket plan"`, []string(nil)))

	// An edit and a delete, through other nodes, show within a second.
	do("edit", func(ctx context.Context) error {
		_, err := as(c, 1, ann).Edit(ctx, "bravo", seqs["bravo/0"], "launch the spaceship")
		return err
	})
	do("delete", func(ctx context.Context) error {
		_, err := as(c, 2, ann).DeleteMessage(ctx, "charlie", seqs["charlie/0"])
		return err
	})
	rest := slices.DeleteFunc(slices.Clone(rockets), func(s string) bool {
		return strings.HasPrefix(s, "bravo/") || strings.HasPrefix(s, "charlie/")
	})
	took := poll.Until(t, 5*time.Second, "the edit and delete reach every node's search", everywhere(cat, "rocket", rest))
	if took > time.Second {
		t.Errorf("edit and delete took %v to show in search, want within a second", took)
	}
	poll.Until(t, time.Second, "the edited text is found", everywhere(cat, "spaceship from:ann in:bravo",
		[]string{fmt.Sprintf("bravo/%d", seqs["bravo/0"])}))
}

// searchFound returns what user finds for q through node i, as room/seq,
// sorted.
func searchFound(c *testcluster.Cluster, i int, user *client.Client, q string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := as(c, i, user).Search(ctx, client.SearchQuery{Q: q, Limit: 100})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(res))
	for k, r := range res {
		out[k] = fmt.Sprintf("%s/%d", r.Room, r.Seq)
	}
	slices.Sort(out)
	return out, nil
}

// searchedEverywhere returns a check that user finds exactly want (sorted
// room/seq) for q through each of nodes.
func searchedEverywhere(c *testcluster.Cluster, nodes []int, user *client.Client, q string, want []string) func() error {
	return func() error {
		for _, i := range nodes {
			got, err := searchFound(c, i, user, q)
			if err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("node %d finds %v, want %v", i, got, want)
			}
		}
		return nil
	}
}

// seedSearch creates rooms (ann's, bob and cat members), posts a rocket and
// a lunch message in each, and a whisper from ann to bob in the first
// room; it returns the seqs of the posts by "room/0" and "room/1".
func seedSearch(t *testing.T, c *testcluster.Cluster, rooms []string, ann, bob, cat *client.Client) map[string]uint64 {
	t.Helper()
	do := func(what string, call func(ctx context.Context) error) { mustRetrying(t, what, call) }
	seqs := map[string]uint64{}
	for i, room := range rooms {
		do("create "+room, func(ctx context.Context) error {
			_, err := ann.CreateRoom(ctx, client.RoomSpec{Name: room})
			return err
		})
		for _, u := range []*client.Client{bob, cat} {
			do("join "+room, func(ctx context.Context) error {
				_, err := as(c, i%3, u).JoinRoom(ctx, room, "")
				return err
			})
		}
		for j, text := range []string{"launch the rocket " + room, "lunch menu " + room} {
			do("post", func(ctx context.Context) error {
				res, err := as(c, (i+j)%3, ann).Post(ctx, room, text, client.PostOptions{})
				seqs[fmt.Sprintf("%s/%d", room, j)] = res.Seq
				return err
			})
		}
	}
	do("whisper", func(ctx context.Context) error {
		_, err := ann.Post(ctx, "alpha", "secret rocket plan", client.PostOptions{To: []string{"bob"}})
		return err
	})
	return seqs
}

// mustRetrying makes call until it succeeds or fails for good (retrying),
// failing the test then.
func mustRetrying(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	if err := retrying(t, what, call); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// With one search replica per partition (the default), each partition is
// indexed on exactly one node. When that node dies, the next replica builds
// the index from its own state as soon as gossip reports the death, and
// searches through the other nodes find everything again, long before the
// dead node's replicas are replaced (dead-after is 10 minutes here).
func TestSearch_IndexingNodeDies(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true,
		Configure: func(i int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.DeadAfter = 10 * time.Minute
		}})
	ann := signUp(t, c, 0, 0, "ann")
	bob := signUp(t, c, 0, 1, "bob")
	cat := signUp(t, c, 0, 2, "cat")
	rooms := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot"}
	seqs := seedSearch(t, c, rooms, ann, bob, cat)
	var rockets []string
	for _, room := range rooms {
		rockets = append(rockets, fmt.Sprintf("%s/%d", room, seqs[room+"/0"]))
	}
	slices.Sort(rockets)
	poll.Until(t, 10*time.Second, "every node finds the rockets", searchedEverywhere(c, []int{0, 1, 2}, cat, "rocket", rockets))

	var indexedOn map[uint64][]int
	poll.Until(t, 10*time.Second, "each partition indexed on one node", func() error {
		indexedOn = map[uint64][]int{}
		for i := range c.Len() {
			for _, p := range c.Node(i).SearchIndexes() {
				indexedOn[p] = append(indexedOn[p], i)
			}
		}
		for _, p := range c.Node(0).Router().Partitions() {
			if len(indexedOn[p]) != 1 {
				return fmt.Errorf("partition %d indexed on nodes %v, want one", p, indexedOn[p])
			}
		}
		return nil
	})
	perNode := make([]int, c.Len())
	for _, on := range indexedOn {
		perNode[on[0]]++
	}
	victim := 0
	for i, k := range perNode {
		if k > perNode[victim] {
			victim = i
		}
	}
	t.Logf("partitions indexed per node %v; killing node %d", perNode, victim)
	c.Kill(victim)
	var rest []int
	for i := range c.Len() {
		if i != victim {
			rest = append(rest, i)
		}
	}
	took := poll.Until(t, time.Minute, "the others find the rockets again", searchedEverywhere(c, rest, cat, "rocket", rockets))
	t.Logf("searches whole again %v after the kill", took)
}
