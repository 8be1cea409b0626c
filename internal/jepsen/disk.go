package jepsen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/nemesis"
)

// diskLeft is what DiskFull leaves free on the victim's disk: less than a
// node's reserve (storage.DefaultMinFreeBytes, 64 MiB), so it sees its disk
// full, and enough for what it still writes (heartbeats, its last entries).
const diskLeft = 32 << 20

// promiseDiskFull is what Parley promises when one node's disk fills.
const promiseDiskFull = "a node whose disk is full refuses the writes it leads with 507, hands its leaderships to nodes with room, takes no entries it could not store and never acknowledges one; the others keep serving writes; when space returns it catches up by itself"

// DiskFull fills the disk (its tmpfs) of the leader, or of a follower, with
// another file until less than the node's reserve is free, as a runaway log
// file would; the heal deletes the file.
func DiskFull(ofLeader bool) Fault {
	var victim *nemesis.Node
	name := "disk full on a follower"
	if ofLeader {
		name = "disk full on the leader"
	}
	return Fault{
		Name:    name,
		Promise: promiseDiskFull,
		Inject: func(c *nemesis.Cluster) (string, error) {
			victim = c.Nodes[pick(c, ofLeader)]
			size, err := victim.FillDisk(diskLeft)
			return fmt.Sprintf("%s: a %d MiB file leaves %d MiB free", victim.ID, size>>20, diskLeft>>20), err
		},
		Heal: func(c *nemesis.Cluster) error {
			// Held past the election timeout: the victim must have handed
			// the partition over (asked of another node).
			other := slices.IndexFunc(c.Nodes, func(n *nemesis.Node) bool { return n != victim })
			if l := c.Leader(other, dataPartition); l >= 0 && c.Nodes[l] == victim {
				_ = victim.FreeDisk()
				return fmt.Errorf("%s still leads partition %d with its disk full", victim.ID, dataPartition)
			}
			return victim.FreeDisk()
		},
	}
}

// TornWAL kills the leader with SIGKILL and leaves the tail of its newest
// WAL torn — a record half written — as a power cut mid-write does; the
// heal restarts it on that directory.
func TornWAL() Fault {
	var victim *nemesis.Node
	return Fault{
		Name:    "kill -9 of the leader mid-write: its WAL's tail torn, restarted",
		Promise: "a torn write at the end of the log is one that was never acknowledged: the node restarts without it and loses nothing acknowledged",
		Inject: func(c *nemesis.Cluster) (string, error) {
			victim = c.Nodes[leader(c)]
			victim.Kill()
			file, off, err := victim.TearWAL(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)))
			return fmt.Sprintf("%s killed; %s torn at byte %d", victim.ID, file, off), err
		},
		Heal: func(c *nemesis.Cluster) error { return victim.Start() },
	}
}
