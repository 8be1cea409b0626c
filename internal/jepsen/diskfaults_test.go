//go:build nemesis

package jepsen_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/jepsen"
	"github.com/parley-chat/parley/internal/nemesis"
)

// A sick disk under the KV workload, each node's data directory on a
// fault-injecting FUSE file system: a slow leader hands its leadership
// over, a node whose fsync or table reads fail stops and is restarted on a
// healthy disk; the history must be linearizable, no acknowledged put
// lost, the replicas identical.
func TestNemesis_DiskFaults(t *testing.T) {
	if err := nemesis.FUSEAvailable(); err != nil {
		t.Skip(err)
	}
	nodes, hold := size()
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: nodes, Args: noLimits, FaultDisks: true})
	faults := []struct {
		name  string
		fault jepsen.Fault
	}{
		{"kv-slow-disk-leader", jepsen.SlowDisk()},
		{"kv-fsync-fails-follower", jepsen.FsyncFails(false)},
		{"kv-fsync-fails-leader", jepsen.FsyncFails(true)},
		{"kv-read-errors-follower", jepsen.ReadErrors()},
	}
	var rows []jepsen.Row
	for _, f := range faults {
		h := hold
		if f.name == "kv-slow-disk-leader" {
			// Past the node's detection (its Raft loop waits on the slow disk
			// too: 2-7 s in our runs) with room to hand over.
			h = max(hold, 12*time.Second)
		}
		rows = append(rows, kvRow(c, f.name, f.fault, h))
	}
	runRows(t, c, rows)
}
