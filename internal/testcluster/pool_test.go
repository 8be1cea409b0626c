package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/partkey"
	"github.com/parley-chat/parley/internal/testcluster"
)

// TestCluster_PoolSendsEachRequestToItsLeader: a client.Pool over every
// node picks, for each kv key and queue, the node leading its partition,
// so its puts reach the leader without a node forwarding them.
func TestCluster_PoolSendsEachRequestToItsLeader(t *testing.T) {
	const partitions = 8
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: partitions, NoSync: true})
	c.WaitLeadersBalanced(60 * time.Second)
	ctx := context.Background()
	clients := []*client.Client{c.Client(0), c.Client(1), c.Client(2)}
	pool := client.NewPool(clients...)
	if err := pool.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if led, parts := pool.Reach(); led != partitions || parts != partitions {
		t.Errorf("Reach() = %d of %d partitions, want every one of %d led by a node of the pool", led, parts, partitions)
	}
	// The same pool over "localhost" for the advertised 127.0.0.1 learns
	// the advertised names from the nodes' answers and routes as well.
	aliases := make([]*client.Client, len(clients))
	for i, cl := range clients {
		aliases[i] = client.New(strings.Replace(cl.Server(), "127.0.0.1", "localhost", 1), client.WithToken(cl.Token()))
	}
	aliased := client.NewPool(aliases...)
	if err := aliased.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if led, parts := aliased.Reach(); led != partitions || parts != partitions {
		t.Errorf("a pool over localhost: Reach() = %d of %d partitions, want every one of %d", led, parts, partitions)
	}

	keys := make([]string, 48)
	for i := range keys {
		keys[i] = fmt.Sprintf("route/%d", i)
	}
	keys = append(keys, "{cart}/a", "{cart}/b")
	for _, key := range keys {
		leader := c.LeaderOf(partkey.Of(partkey.KV(key), partitions))
		if got := pool.ForKV(key, nil); leader < 0 || got != clients[leader] {
			t.Errorf("ForKV(%q) = %v, want the client of node %d, the leader of partition %d", key, got, leader, partkey.Of(partkey.KV(key), partitions))
		}
	}
	for i := range 8 {
		q := fmt.Sprintf("jobs-%d", i)
		leader := c.LeaderOf(partkey.Of(q, partitions))
		if got := pool.ForQueue(q, nil); leader < 0 || got != clients[leader] {
			t.Errorf("ForQueue(%q) = %v, want the client of node %d", q, got, leader)
		}
	}

	for _, room := range []string{"general", "General", "town-hall", "Ops.2"} {
		part := partkey.Of(strings.ToLower(room), partitions) // the server folds room names
		leader := c.LeaderOf(part)
		if got := pool.ForRoom(room, nil); leader < 0 || got != clients[leader] {
			t.Errorf("ForRoom(%q) = %v, want the client of node %d, the leader of partition %d", room, got, leader, part)
		}
	}

	// Puts through the pool make (almost) no internal calls; the same puts
	// spread round-robin make one for each put a node does not lead.
	calls := func() (n uint64) {
		for i := range 3 {
			n += c.Node(i).Transport().Stats().CallsSent
		}
		return n
	}
	value := []byte("v")
	before := calls()
	for _, key := range keys {
		if _, err := pool.ForKV(key, clients[0]).KVPut(ctx, key, value, client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	routed := calls() - before
	before = calls()
	forwarded := 0
	for i, key := range keys {
		if c.LeaderOf(partkey.Of(partkey.KV(key), partitions)) != i%3 {
			forwarded++
		}
		if _, err := clients[i%3].KVPut(ctx, key, value, client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	spread := calls() - before
	t.Logf("internal calls for %d puts: %d through the pool, %d round-robin (%d not sent to their leader)", len(keys), routed, spread, forwarded)
	if routed*4 > spread || spread < uint64(forwarded) {
		t.Errorf("internal calls for %d puts: %d through the pool, %d round-robin (%d not sent to their leader): the pool did not save the forwarding", len(keys), routed, spread, forwarded)
	}
}
