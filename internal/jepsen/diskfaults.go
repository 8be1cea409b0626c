package jepsen

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/nemesis"
)

// Faults of a sick disk, injected through the nodes' fault-injecting file
// systems (nemesis.Options.FaultDisks).

// slowDiskDelay is what the slow disk adds to every write and fsync: a
// synced commit (a write, then an fsync) takes over 2 × this, above the
// node's 500 ms threshold (--disk-slow-sync).
const slowDiskDelay = 400 * time.Millisecond

// stopWithin is how long a node whose fsyncs fail may take to stop.
const stopWithin = 20 * time.Second

// SlowDisk makes every write and fsync of the leader's disk slow; the heal
// makes it fast again. Held past the node's detection window, the leader
// must have handed its leadership over by then (asked of another node).
func SlowDisk() Fault {
	var victim *nemesis.Node
	var seen string
	var moved *leaderWatch
	return Fault{
		Seen:    func() string { return seen },
		Name:    fmt.Sprintf("slow disk on the leader (every write and fsync +%v)", slowDiskDelay),
		Promise: "a node whose disk turns slow (its synced commits take over 500 ms) hands its leaderships to nodes with a healthy disk within seconds and is not chosen to lead while it stays slow; writes go on at the others' pace (reads through the slow node itself stay slow: it must apply up to the read index); nothing acknowledged is lost",
		Inject: func(c *nemesis.Cluster) (string, error) {
			victim = c.Nodes[leader(c)]
			_, err := victim.DiskFault("delay " + slowDiskDelay.String())
			moved = watchLeaderLeave(c, victim)
			return victim.ID + " slowed", err
		},
		Heal: func(c *nemesis.Cluster) error {
			after, to := moved.stop()
			counts, err := victim.DiskFault("heal")
			if err != nil {
				return err
			}
			if to == "" {
				return fmt.Errorf("%s still leads partition %d with a slow disk (%s)", victim.ID, dataPartition, counts)
			}
			seen = fmt.Sprintf("leadership moved to %s %.1f s after the disk slowed; faultfs: %s", to, after.Seconds(), counts)
			return nil
		},
	}
}

// FsyncFails makes every fsync of a node's disk (the leader's, or a
// follower's) fail with EIO. The node must stop by itself; the heal checks
// it did, gives it a healthy disk again and restarts it on its data.
func FsyncFails(ofLeader bool) Fault {
	var victim *nemesis.Node
	var seen string
	name := "fsync fails (EIO) on a follower"
	if ofLeader {
		name = "fsync fails (EIO) on the leader"
	}
	return Fault{
		Seen:    func() string { return seen },
		Name:    name,
		Promise: "a node whose fsync fails stops (exit 1) without acknowledging what it could not sync and never retries the fsync; the others go on; restarted on a healthy disk it replays what is durable and catches up",
		Inject: func(c *nemesis.Cluster) (string, error) {
			victim = c.Nodes[pick(c, ofLeader)]
			_, err := victim.DiskFault("fsync-eio on")
			return victim.ID + "'s fsyncs fail", err
		},
		Heal: func(c *nemesis.Cluster) error {
			stopped := waitExit(victim, stopWithin)
			counts, err := victim.DiskFault("heal")
			if err != nil {
				return err
			}
			seen = fmt.Sprintf("%s stopped by itself; faultfs: %s", victim.ID, counts)
			if !stopped {
				victim.Kill()
				return fmt.Errorf("%s still runs %v after its fsyncs began to fail (%s)", victim.ID, stopWithin, counts)
			}
			return victim.Start()
		},
	}
}

// ReadErrors writes probe keys, restarts a follower (kill -9), so its
// caches are cold, and once it is ready makes every read of its table
// files (*.sst) fail with EIO, then reads the probe keys through it (its
// start-up scrub may have cached every block by then: the reads that reach
// the disk are a matter of timing). If it still runs, it is restarted on
// the failing disk, where its start must read its tables. The node must
// stop or answer correctly — never a wrong or empty answer; the heal
// restarts it on a healthy disk.
func ReadErrors() Fault {
	var victim *nemesis.Node
	var seen string
	probe := &readProbe{prefix: "probe/read-errors/"}
	return Fault{
		Seen:    func() string { return seen },
		Name:    "reads of a follower's tables fail (EIO): while it runs, then as it restarts",
		Promise: "a read the store cannot do fails the request with a 5xx, never a wrong or empty answer; a node whose store returns read errors stops (exit 1); restarted on a healthy disk it catches up",
		Inject: func(c *nemesis.Cluster) (string, error) {
			i := pick(c, false)
			victim = c.Nodes[i]
			if err := probe.write(c, leader(c), i); err != nil {
				return "", err
			}
			victim.Kill()
			if err := victim.Start(); err != nil {
				return "", err
			}
			c.WaitReady(victim, time.Minute)
			if _, err := victim.DiskFault("read-eio on"); err != nil {
				return "", err
			}
			probe.read(c, i)
			detail := victim.ID + " restarted, then its table reads fail; " + probe.String()
			if waitExit(victim, 0) {
				return detail, nil
			}
			victim.Kill()
			return detail + "; restarted on the failing disk", victim.Start()
		},
		Heal: func(c *nemesis.Cluster) error {
			counts, err := victim.DiskFault("counts")
			if err != nil {
				return err
			}
			if len(probe.wrong) > 0 {
				return fmt.Errorf("wrong answers through %s: %s", victim.ID, strings.Join(probe.wrong, "; "))
			}
			grace := time.Duration(0) // no read failed: it may well run on
			if counts.ReadsFailed > 0 {
				grace = stopWithin // it must stop, if it has not yet
			}
			stopped := waitExit(victim, grace)
			if counts, err = victim.DiskFault("heal"); err != nil {
				return err
			}
			if !stopped {
				seen = fmt.Sprintf("%s kept serving; faultfs: %s", victim.ID, counts)
				if counts.ReadsFailed > 0 {
					victim.Kill()
					return fmt.Errorf("%s kept running after %d reads of its tables failed", victim.ID, counts.ReadsFailed)
				}
				return nil
			}
			seen = fmt.Sprintf("%s stopped by itself; faultfs: %s", victim.ID, counts)
			return victim.Start()
		},
	}
}

// leaderWatch polls, through the nodes other than victim, who leads the
// data partition, until the leadership leaves victim.
type leaderWatch struct {
	done  chan struct{}
	quit  chan struct{}
	after time.Duration
	to    string
}

// watchLeaderLeave starts a leaderWatch.
func watchLeaderLeave(c *nemesis.Cluster, victim *nemesis.Node) *leaderWatch {
	w := &leaderWatch{done: make(chan struct{}), quit: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(w.done)
		for {
			for i, n := range c.Nodes {
				if n == victim {
					continue
				}
				if l := c.Leader(i, dataPartition); l >= 0 && c.Nodes[l] != victim {
					w.after, w.to = time.Since(start), c.Nodes[l].ID
					return
				}
			}
			select {
			case <-w.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

// stop ends the watch and returns when the leadership left and to whom
// ("" if it did not).
func (w *leaderWatch) stop() (time.Duration, string) {
	close(w.quit)
	<-w.done
	return w.after, w.to
}

// pick returns the index of the data partition's leader, or of a node
// holding one of its followers (with more nodes than replicas, some hold
// none: a disk fault there would meet no write of the workload).
func pick(c *nemesis.Cluster, ofLeader bool) int {
	l := leader(c)
	if ofLeader {
		return l
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st, err := c.Admin(l).Cluster(ctx); err == nil {
		for _, p := range st.Partitions {
			if p.ID != dataPartition {
				continue
			}
			for _, r := range p.Replicas {
				if i := slices.IndexFunc(c.Nodes, func(n *nemesis.Node) bool { return n.ID == r.Node }); i >= 0 && i != l && r.Role == "follower" {
					return i
				}
			}
		}
	}
	return (l + 1) % len(c.Nodes)
}

// waitExit waits up to d for n's process to end and reports whether it
// did.
func waitExit(n *nemesis.Node, d time.Duration) bool {
	exited := n.Exited()
	if exited == nil {
		return true
	}
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	select {
	case <-exited:
	case <-timeout.C:
		select {
		case <-exited: // it ended as time ran out
		default:
			return false
		}
	}
	n.Kill() // forget the process
	return true
}
