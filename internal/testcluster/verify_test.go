package testcluster_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Verify finds every replica equal on a healthy cluster, refuses
// non-admins, and names exactly the replica whose state was changed behind
// Raft's back.
func TestCluster_Verify(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	var mu sync.Mutex
	dataDirs := map[int]string{}
	c := testcluster.New(t, testcluster.Options{
		Nodes: 3, NoSync: true,
		Configure: func(i int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			mu.Lock()
			dataDirs[i] = cfg.DataDir
			mu.Unlock()
		},
	})
	admin := c.Client(0) // the cluster's first user: admin
	for i := range 40 {
		if _, err := admin.KVPut(apiCtx(t), fmt.Sprintf("k%d", i), []byte("v"), client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := admin.Verify(apiCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := c.Node(0).Map().Partitions + 1; len(rep.Partitions) != want {
		t.Fatalf("%d groups verified, want %d (partitions and metadata)", len(rep.Partitions), want)
	}
	for _, p := range rep.Partitions {
		if !p.Match || len(p.Replicas) != 3 {
			t.Fatalf("healthy cluster: group %d not matching: %+v", p.Group, p)
		}
	}
	if rep.Mismatches != 0 || rep.Unverified != 0 {
		t.Fatalf("healthy cluster: %d mismatches, %d unverified", rep.Mismatches, rep.Unverified)
	}

	user := signUp(t, c, 1, 1, "mallory")
	_, err = user.Verify(apiCtx(t))
	mustStatus(t, err, http.StatusForbidden, "forbidden")

	// Change node 2's copy of one partition directly in its store.
	const victim = 2
	p := c.Node(0).Router().PartitionOf("k7")
	c.Kill(victim)
	corrupt(t, dataDirs[victim], p)
	c.Restart(victim)
	c.WaitConverged(30 * time.Second)

	rep, err = c.Client(0).Verify(apiCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mismatches != 1 {
		t.Fatalf("%d mismatches, want 1: %+v", rep.Mismatches, rep)
	}
	victimID := c.Node(victim).ID()
	for _, pc := range rep.Partitions {
		if pc.Group != p {
			if !pc.Match {
				t.Fatalf("group %d reported different: %+v", pc.Group, pc)
			}
			continue
		}
		if pc.Match {
			t.Fatalf("corrupted group %d reported equal", p)
		}
		sums := map[client.Checksum][]string{}
		for _, r := range pc.Replicas {
			if r.Checksum == "" || r.Applied != pc.Applied {
				t.Fatalf("replica %s of group %d: checksum %q at %d, want one at %d (%s)", r.Node, p, r.Checksum, r.Applied, pc.Applied, r.Error)
			}
			sums[r.Checksum] = append(sums[r.Checksum], r.Node)
		}
		for _, nodes := range sums {
			if len(nodes) == 1 && nodes[0] != victimID {
				t.Fatalf("the odd replica is on %s, want %s: %+v", nodes[0], victimID, pc)
			}
		}
		if len(sums) != 2 {
			t.Fatalf("group %d: %d distinct checksums, want 2: %+v", p, len(sums), pc)
		}
	}
}

// corrupt adds a key to a partition's state in a stopped node's store.
func corrupt(t *testing.T, dir string, group uint64) {
	t.Helper()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := db.Group(group)
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	defer b.Close()
	if err := b.State(g).Set([]byte("Kzz-bit-rot"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(true); err != nil {
		t.Fatal(err)
	}
}
