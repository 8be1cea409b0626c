package jepsen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/nemesis"
)

// dataPartition is the Raft group the rows aim at: the clusters have one
// partition, so its leader is "the leader".
const dataPartition = 1

// leader returns the index of the data partition's leader, asking every
// node until one knows (the first node when none does).
func leader(c *nemesis.Cluster) int {
	for i := range c.Nodes {
		if l := c.Leader(i, dataPartition); l >= 0 {
			return l
		}
	}
	return 0
}

// host returns node i's host number (from 1).
func host(i int) int { return i + 1 }

// hosts maps node indexes to host numbers.
func hosts(idx []int) []int {
	out := make([]int, len(idx))
	for i, n := range idx {
		out[i] = host(n)
	}
	return out
}

// Partition promises, shared by the partition rows.
const (
	promiseMajority = "the side with a majority of a partition's replicas keeps serving writes and linearizable reads; the other side serves neither; no acknowledged write is lost"
	promisePaused   = "a paused or killed leader is replaced within seconds; when it comes back it never answers from its old state"
)

// MinorityPartition cuts a minority of followers away; the leader keeps
// its majority.
func MinorityPartition() Fault {
	return Fault{
		Name:    "partition: minority of followers cut off",
		Promise: promiseMajority,
		Inject: func(c *nemesis.Cluster) (string, error) {
			maj, min := c.Net.Majority(host(leader(c)))
			return fmt.Sprintf("hosts %v | %v (iptables DROP)", maj, min), c.Net.Partition(maj, min)
		},
		Heal: healNet,
	}
}

// MajorityPartition puts the leader in the minority: the majority must
// elect a new leader while the old one is cut off.
func MajorityPartition() Fault {
	return Fault{
		Name:    "partition: leader in the minority",
		Promise: promiseMajority,
		Inject: func(c *nemesis.Cluster) (string, error) {
			l := host(leader(c))
			size := len(c.Nodes) - (len(c.Nodes)/2 + 1)
			minority, majority := []int{l}, []int{}
			for _, h := range c.Net.Hosts {
				switch {
				case h.Index == l:
				case len(minority) < size:
					minority = append(minority, h.Index)
				default:
					majority = append(majority, h.Index)
				}
			}
			return fmt.Sprintf("hosts %v | %v, leader n%d in the minority", majority, minority, l), c.Net.Partition(majority, minority)
		},
		Heal: healNet,
	}
}

// LeaderIsolated cuts the leader from every other node.
func LeaderIsolated() Fault {
	return Fault{
		Name:    "partition: leader isolated",
		Promise: promiseMajority,
		Inject: func(c *nemesis.Cluster) (string, error) {
			l := host(leader(c))
			return fmt.Sprintf("n%d isolated", l), c.Net.Isolate(l)
		},
		Heal: healNet,
	}
}

// BridgePartition splits the nodes in two halves that only one node, a
// follower, can reach both of: connectivity is not transitive.
func BridgePartition() Fault {
	return Fault{
		Name:    "partition: bridge (non-transitive)",
		Promise: promiseMajority,
		Inject: func(c *nemesis.Cluster) (string, error) {
			mid := host((leader(c) + 1) % len(c.Nodes))
			return fmt.Sprintf("n%d bridges the two halves", mid), c.Net.Bridge(mid)
		},
		Heal: healNet,
	}
}

// OneWay drops everything the leader sends to the others, nothing they
// send it.
func OneWay() Fault {
	return Fault{
		Name:    "partition: one-way (leader's packets out dropped)",
		Promise: promiseMajority,
		Inject: func(c *nemesis.Cluster) (string, error) {
			l := host(leader(c))
			var errs []error
			for _, h := range c.Net.Hosts {
				if h.Index != l {
					errs = append(errs, c.Net.CutOneWay(l, h.Index))
				}
			}
			return fmt.Sprintf("n%d -> others dropped", l), errors.Join(errs...)
		},
		Heal: healNet,
	}
}

// Flapping isolates a random node for a random 0.5–1.5 s, heals for as
// long, and again, until healed.
func Flapping() Fault {
	var stop chan struct{}
	var wg sync.WaitGroup
	return Fault{
		Name:    "partition: flapping (random node isolated, healed, every ~1 s)",
		Promise: promiseMajority,
		Inject: func(c *nemesis.Cluster) (string, error) {
			stop = make(chan struct{})
			wg.Go(func() {
				for {
					_ = c.Net.Isolate(1 + rand.IntN(len(c.Nodes)))
					if sleepOrStop(stop) {
						return
					}
					_ = c.Net.Heal()
					if sleepOrStop(stop) {
						return
					}
				}
			})
			return "iptables DROP toggled", nil
		},
		Heal: func(c *nemesis.Cluster) error {
			close(stop)
			wg.Wait()
			return healNet(c)
		},
	}
}

// sleepOrStop sleeps 0.5–1.5 s; it returns true if stop closed first.
func sleepOrStop(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	case <-time.After(500*time.Millisecond + rand.N(time.Second)):
		return false
	}
}

// Loss drops a share p of the packets every node sends.
func Loss(p float64) Fault {
	return Fault{
		Name:    fmt.Sprintf("packet loss %.0f%% on every node", 100*p),
		Promise: "writes and reads slow down but stay linearizable; nothing acknowledged is lost",
		Inject: func(c *nemesis.Cluster) (string, error) {
			var errs []error
			for _, h := range c.Net.Hosts {
				errs = append(errs, c.Net.Loss(h.Index, p))
			}
			return "iptables statistic DROP", errors.Join(errs...)
		},
		Heal: healNet,
	}
}

// Delay delays every node's packets by d ± d/2 and reorders a share of
// them.
func Delay(d time.Duration, reorder float64) Fault {
	return Fault{
		Name:    fmt.Sprintf("delay %v ± %v, %.0f%% reordered, every node", d, d/2, 100*reorder),
		Promise: "writes and reads slow down but stay linearizable; nothing acknowledged is lost",
		Inject: func(c *nemesis.Cluster) (string, error) {
			how := ""
			for _, h := range c.Net.Hosts {
				mech, err := c.Net.Delay(h.Index, d, d/2, reorder)
				if err != nil {
					return "", err
				}
				how = mech
			}
			return "via " + how, nil
		},
		Heal: healNet,
	}
}

// KillLeader kills the leader with SIGKILL and restarts it from its data
// directory when healed.
func KillLeader() Fault {
	var victim *nemesis.Node
	return Fault{
		Name:    "kill -9 of the leader, restarted",
		Promise: promisePaused,
		Inject: func(c *nemesis.Cluster) (string, error) {
			victim = c.Nodes[leader(c)]
			victim.Kill()
			return victim.ID + " killed", nil
		},
		Heal: func(c *nemesis.Cluster) error { return victim.Start() },
	}
}

// PauseLeader stops the leader with SIGSTOP for longer than the election
// timeout and continues it with SIGCONT when healed.
func PauseLeader() Fault {
	var victim *nemesis.Node
	return Fault{
		Name:    "SIGSTOP of the leader past the election timeout, SIGCONT",
		Promise: promisePaused,
		Inject: func(c *nemesis.Cluster) (string, error) {
			victim = c.Nodes[leader(c)]
			return victim.ID + " paused", victim.Pause()
		},
		Heal: func(c *nemesis.Cluster) error { return victim.Resume() },
	}
}

// healNet removes every network fault.
func healNet(c *nemesis.Cluster) error { return c.HealAll() }
