package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/testcluster"
)

// A linearizable read whose local replica is closed and destroyed while it
// reads (the controller moved the replica away) is read again elsewhere,
// never answered from the emptied state.
func TestRead_ReplicaDestroyedDuringRead(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Client(0).KVPut(ctx, "k", []byte("v"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	n := c.Node(0)
	p := n.Router().PartitionOf("k")
	if !n.Engine().HasGroup(p) {
		t.Fatalf("n1 holds no replica of partition %d", p)
	}
	st, ok, err := n.Engine().GroupStatus(ctx, p)
	if err != nil || !ok {
		t.Fatalf("status of partition %d on n1: %v, %v", p, ok, err)
	}
	calls := 0
	var item kv.Item
	var found bool
	_, err = n.Router().Read(ctx, p, false, func(r state.Reader) error {
		calls++
		if calls == 1 {
			// The replica goes, data and all, between the read index and
			// the read. (The map still lists it, but a destroyed replica
			// is never opened again: its leader counts what it held.)
			if err := n.Engine().CloseGroup(ctx, p, st.Replica, true); err != nil {
				return err
			}
		}
		var err error
		item, found, err = kv.Get(r, "k")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found || string(item.Value) != "v" {
		t.Fatalf("read after the replica was destroyed mid-read = %q, found %v (after %d attempts); want v", item.Value, found, calls)
	}
	if calls < 2 {
		t.Fatalf("the read was not retried (%d attempts)", calls)
	}
}
