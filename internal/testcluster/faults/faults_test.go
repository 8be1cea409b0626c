package faults_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Short names for the KV helpers of package testcluster.
var (
	mustPut = testcluster.MustPut
	mustGet = testcluster.MustGet
	// retryable says what a client retries.
	retryable = testcluster.Retryable
)

// A write acknowledged to the client was fsynced: a power loss right after
// the acknowledgement loses nothing, on one node and on a whole cluster.
func TestDurability_CrashBeforeSyncLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	for _, nodes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d nodes all crash", nodes), func(t *testing.T) {
			c := testcluster.New(t, testcluster.Options{Nodes: nodes, Partitions: 4, CrashableFS: true})
			acked := map[string]uint64{}
			for i := 0; i < 60; i++ {
				key := fmt.Sprintf("k%d", i%20)
				acked[key] = mustPut(t, c.Client(i%nodes), key, fmt.Sprintf("v%d", i), client.PutOptions{})
			}
			c.CrashAll()
			for i := 0; i < nodes; i++ {
				c.Restart(i)
			}
			for key, ver := range acked {
				if _, got := mustGet(t, c.Client(0), key, client.GetOptions{}); got != ver {
					t.Errorf("%s: version %d after crash, acknowledged %d", key, got, ver)
				}
			}
		})
	}
}

// A node cut off into a minority refuses linearizable reads rather than
// answering with what may be old data.
func TestReads_MinorityNodeRefusesLinearizableReads(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	mustPut(t, c.Client(0), "k", "old", client.PutOptions{})
	c.Isolate(0)
	mustPut(t, c.Client(1), "k", "new", client.PutOptions{})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	v, _, err := c.Client(0).KVGet(ctx, "k", client.GetOptions{})
	var ce *client.Error
	switch {
	case err == nil:
		t.Fatalf("isolated node answered a linearizable read with %q", v)
	case errors.As(err, &ce) && ce.Status == 503 && ce.Retryable:
	case errors.Is(err, context.DeadlineExceeded):
	default:
		t.Fatalf("isolated node read: %v, want a retryable 503", err)
	}
	// A stale read is allowed and says how stale it may be.
	if _, _, err := c.Client(0).KVGet(context.Background(), "k", client.GetOptions{Stale: true}); err != nil {
		t.Fatalf("stale read on isolated node: %v", err)
	}
	c.Heal(0)
	if got, _ := mustGet(t, c.Client(0), "k", client.GetOptions{}); got != "new" {
		t.Fatalf("after heal read %q, want new", got)
	}
}

// Growing from one node to three gives every partition learners that catch
// up (by snapshot when the log was compacted) and are promoted.
func TestMembership_GrowOneToThreeBySnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{
		Nodes: 1, Partitions: 4, NoSync: true,
		Configure: func(_ int, cfg *config.Config) { cfg.CompactionThreshold = 20 },
	})
	const keys = 200
	for i := 0; i < keys; i++ {
		mustPut(t, c.Client(0), fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i), client.PutOptions{})
	}
	c.AddNode()
	c.AddNode()
	c.WaitConverged(30 * time.Second)
	for i := 1; i < 3; i++ {
		st := c.Node(i).Transport().Stats()
		if st.SnapshotsReceived == 0 {
			t.Errorf("node %d caught up without a snapshot although the leader's log was compacted", i+1)
		}
		// Every new node now holds a replica of every partition, so these
		// linearizable reads are served from its own copy.
		for k := 0; k < keys; k += 7 {
			key := fmt.Sprintf("k%03d", k)
			if got, _ := mustGet(t, c.Client(i), key, client.GetOptions{}); got != fmt.Sprintf("v%d", k) {
				t.Fatalf("node %d: %s = %q", i+1, key, got)
			}
		}
	}
}

// Stopping every node and starting them again brings every key back, and
// nothing is applied twice (each key's version equals its number of puts).
func TestRestart_AllNodesResumeWithoutReapplying(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4})
	const keys, rounds = 20, 3
	for r := 0; r < rounds; r++ {
		for k := 0; k < keys; k++ {
			mustPut(t, c.Client((r+k)%3), fmt.Sprintf("k%d", k), fmt.Sprintf("r%d", r), client.PutOptions{})
		}
	}
	for i := 0; i < 3; i++ {
		c.Kill(i)
	}
	for i := 0; i < 3; i++ {
		c.Restart(i)
	}
	c.VerifyReplicas(20 * time.Second)
	for k := 0; k < keys; k++ {
		for i := 0; i < 3; i++ {
			v, ver := mustGet(t, c.Client(i), fmt.Sprintf("k%d", k), client.GetOptions{})
			if v != fmt.Sprintf("r%d", rounds-1) || ver != rounds {
				t.Fatalf("k%d via n%d = %q v%d, want r%d v%d", k, i+1, v, ver, rounds-1, rounds)
			}
		}
	}
}

// A put retried with the same idempotency key after its partition's leader
// was killed is applied once: the version rises exactly once.
func TestIdempotency_RetryAfterLeaderKillAppliesOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	key := "counter"
	v1 := mustPut(t, c.Client(0), key, "a", client.PutOptions{})
	p := c.Node(0).Router().PartitionOf(key)
	leader := c.LeaderOf(p)
	other := (leader + 1) % 3

	opts := client.PutOptions{IdempotencyKey: "req-42"}
	v2 := mustPut(t, c.Client(leader), key, "b", opts)
	c.Kill(leader)
	v3 := mustPut(t, c.Client(other), key, "b", opts)
	if v2 != v1+1 || v3 != v2 {
		t.Fatalf("versions: first %d, put %d, retry %d; want %d, %d", v1, v2, v3, v1+1, v1+1)
	}
	c.Restart(leader)
	if _, ver := mustGet(t, c.Client(leader), key, client.GetOptions{}); ver != v2 {
		t.Fatalf("version after retry %d, want %d", ver, v2)
	}
	// A new key is a new write.
	if v4 := mustPut(t, c.Client(other), key, "b", client.PutOptions{IdempotencyKey: "req-43"}); v4 != v2+1 {
		t.Fatalf("a new idempotency key gave version %d, want %d", v4, v2+1)
	}
}

// Idempotency records are part of the replicated state: a replica that
// caught up by snapshot answers a retry with the first result.
func TestIdempotency_RecordsTravelInSnapshots(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{
		Nodes: 1, Partitions: 2, NoSync: true,
		Configure: func(_ int, cfg *config.Config) { cfg.CompactionThreshold = 10 },
	})
	opts := client.PutOptions{IdempotencyKey: "once"}
	first := mustPut(t, c.Client(0), "k", "a", opts)
	for i := 0; i < 50; i++ { // push the put out of the log: only a snapshot carries it now
		mustPut(t, c.Client(0), fmt.Sprintf("filler%d", i), "x", client.PutOptions{})
	}
	c.AddNode()
	c.AddNode()
	c.WaitConverged(30 * time.Second)
	c.Kill(0)
	if again := mustPut(t, c.Client(1), "k", "a", opts); again != first {
		t.Fatalf("retry after snapshot catch-up returned version %d, want %d", again, first)
	}
	if _, ver := mustGet(t, c.Client(2), "k", client.GetOptions{}); ver != first {
		t.Fatalf("version %d after retry, want %d", ver, first)
	}
}

// Without a quorum a write fails with a retryable 503 and Retry-After well
// before the client gives up, instead of hanging.
func TestAvailability_NoQuorumFailsWithRetryable503(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 2, NoSync: true})
	mustPut(t, c.Client(0), "k", "v", client.PutOptions{})
	c.Kill(1)
	c.Kill(2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.Client(0).KVPut(ctx, "k", []byte("w"), client.PutOptions{IdempotencyKey: "k1"})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 503 || !ce.Retryable || ce.RetryAfter <= 0 {
		t.Fatalf("write without quorum: %v, want a retryable 503 with Retry-After", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the server kept the request until the client gave up")
	}
	// Once a majority is back, the same retry succeeds, applied once.
	c.Restart(1)
	if v := mustPut(t, c.Client(0), "k", "w", client.PutOptions{IdempotencyKey: "k1"}); v != 2 {
		t.Fatalf("version %d after retry, want 2", v)
	}
}

// A lossy, slow internal network delays writes but loses none of them.
func TestAvailability_LossyNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	c.SetNetworkFaults(0.2, 2*time.Millisecond)
	for i := 0; i < 40; i++ {
		mustPut(t, c.Client(i%3), fmt.Sprintf("k%d", i), "v", client.PutOptions{IdempotencyKey: fmt.Sprintf("r%d", i)})
	}
	c.SetNetworkFaults(0, 0)
	for i := 0; i < 40; i++ {
		if v, ver := mustGet(t, c.Client((i+1)%3), fmt.Sprintf("k%d", i), client.GetOptions{}); v != "v" || ver != 1 {
			t.Fatalf("k%d = %q v%d", i, v, ver)
		}
	}
}

// Shutdown (what SIGTERM does) hands every group the node leads to another
// replica before the node stops, so no partition waits for an election.
func TestLifecycle_ShutdownHandsLeadershipOver(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	// A 100 ms tick gives the hand-over 3 s (three election timeouts) on
	// a busy machine, while an election still leaves a group leaderless
	// for a second.
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 6, NoSync: true, Tick: 100 * time.Millisecond})
	victim := c.LeaderOf(0)
	led := 0
	for g := uint64(0); g <= 6; g++ {
		if c.LeaderOf(g) == victim {
			led++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Node(victim).Shutdown(ctx)
	c.Kill(victim)
	// An election would take at least one election timeout (1 s here);
	// the hand-over leaves a leader in place at once.
	for g := uint64(0); g <= 6; g++ {
		if l := c.LeaderOf(g); l < 0 || l == victim {
			t.Fatalf("group %d has no leader right after shutdown (the node led %d groups)\n%s", g, led, c.Report())
		}
	}
}

// A node that comes back with an empty data directory cannot take its old id
// (the id belongs to the certificate the old node joined with); once the
// operator removed the dead node, it joins as a new member: its old
// replicas are dropped, new ones with new ids take their place, and it ends
// up holding every key again.
func TestMembership_EmptyDataDirRejoinsWithNewReplicaIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	for i := 0; i < 20; i++ {
		mustPut(t, c.Client(i%3), fmt.Sprintf("k%d", i), "v", client.PutOptions{})
	}
	old := map[uint64]uint64{}
	for _, g := range c.Node(0).Map().Groups {
		if r, ok := c.Node(0).Map().ReplicaOn(g.ID, "n3"); ok {
			old[g.ID] = r.ID
		}
	}
	c.Client(0) // the admin signs in while every node is up
	c.Kill(2)
	if err := c.WipeErr(2); err == nil || !strings.Contains(err.Error(), "node id taken") {
		t.Fatalf("a node with an empty data directory took a member's id: %v", err)
	}
	c.Kill(2)
	removeWhenDead(t, c.Client(0), "n3")
	c.Wipe(2)
	c.WaitConverged(30 * time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := c.Node(0).Map()
		done := true
		for _, g := range m.Groups {
			r, ok := m.ReplicaOn(g.ID, "n3")
			if !ok || r.ID == old[g.ID] {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n3's replicas were not replaced with new ids: %+v", m.Groups)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.WaitConverged(30 * time.Second)
	c.VerifyReplicas(30 * time.Second)
	for i := 0; i < 20; i++ {
		if v, _ := mustGet(t, c.Client(2), fmt.Sprintf("k%d", i), client.GetOptions{}); v != "v" {
			t.Fatalf("k%d = %q via the rejoined node", i, v)
		}
	}
}

// removeWhenDead removes a stopped node as an operator would, retrying
// until gossip has declared it dead.
func removeWhenDead(t *testing.T, cl *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := cl.RemoveNode(ctx, id)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("remove %s: %v", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A replica that catches up by snapshot while it runs applies the writes
// after it as the others do: what its state machine remembered of the state
// before (kv's apply cache) is dropped with the state the snapshot replaced.
func TestKV_SnapshotResetsWhatApplyRemembers(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c, victim := snapshotCluster(t)
	writer := c.Client((victim + 1) % 3)
	for i := range 4 {
		mustPut(t, c.Client(victim), fmt.Sprintf("k%d", i), "before", client.PutOptions{})
	}
	c.VerifyReplicas(30 * time.Second) // the victim applied them: its cache knows k0..k3
	c.Isolate(victim)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := writer.KVDelete(ctx, "k0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 { // past the compaction threshold: only a snapshot catches the victim up
		mustPut(t, writer, fmt.Sprintf("k%d", 1+i%3), "during", client.PutOptions{})
	}
	c.Heal(victim)
	c.VerifyReplicas(30 * time.Second)
	if v := mustPut(t, writer, "k0", "after", client.PutOptions{}); v != 1 {
		t.Fatalf("k0 recreated at version %d, want 1", v)
	}
	mustPut(t, writer, "k1", "after", client.PutOptions{})
	c.VerifyReplicas(30 * time.Second)
}

// snapshotCluster starts a 3-node cluster with one partition whose Raft
// logs compact after 10 entries, and returns it with a victim: a node that
// leads neither group, so that isolating it stalls nothing and catching it
// up after a few dozen writes takes a snapshot.
func snapshotCluster(t *testing.T) (*testcluster.Cluster, int) {
	t.Helper()
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, Partitions: 1, NoSync: true,
		Configure: func(_ int, cfg *config.Config) { cfg.CompactionThreshold = 10 },
	})
	c.WaitConverged(30 * time.Second)
	victim := (c.LeaderOf(1) + 1) % 3
	if victim == c.LeaderOf(0) {
		victim = (victim + 1) % 3
	}
	return c, victim
}

// TestQueue_SnapshotResetsWhatApplyRemembers: a running replica caught up
// by a snapshot forgets the queue records, floors and messages its queue
// Apply remembered (queue.StateMachine's memo, reset by the engine), and
// applies later sends, receives and acks as the others do.
func TestQueue_SnapshotResetsWhatApplyRemembers(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c, victim := snapshotCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	writer := c.Client((victim + 1) % 3)
	if _, err := c.Client(victim).CreateQueue(ctx, "snapq"); err != nil {
		t.Fatal(err)
	}
	through := func(cl *client.Client, sends, takes int) {
		t.Helper()
		for i := range sends {
			if _, err := cl.Send(ctx, "snapq", fmt.Sprintf("m%d", i), client.SendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for range takes {
			msg, found, err := cl.Receive(ctx, "snapq", client.ReceiveOptions{AckTimeout: time.Minute})
			if err != nil || !found {
				t.Fatalf("receive: found %v, %v", found, err)
			}
			if err := cl.Ack(ctx, "snapq", msg.Receipt); err != nil {
				t.Fatal(err)
			}
		}
	}
	through(c.Client(victim), 4, 2)
	c.VerifyReplicas(30 * time.Second) // the victim applied them: its memo knows the queue
	c.Isolate(victim)
	through(writer, 30, 30) // past the compaction threshold: only a snapshot catches the victim up
	c.Heal(victim)
	c.VerifyReplicas(30 * time.Second)
	through(writer, 3, 3)
	through(c.Client(victim), 2, 2)
	c.VerifyReplicas(30 * time.Second)
}
