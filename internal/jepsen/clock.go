package jepsen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/nemesis"
)

// promiseClock is what Parley promises when a node's wall clock jumps.
const promiseClock = "a node keeps time by its monotonic clock (internal/clock): a jump of its wall clock, forward or back, ends no lease or idempotency record early or late and is reported as a clock_jump event; Raft counts ticks, so reads stay linearizable"

// probeLeaseTTL is the lease the clock probe takes before the jump: longer
// than any row holds its fault, far shorter than the jump.
const probeLeaseTTL = 2 * time.Minute

// ClockJump steps the wall clock of the data partition's leader by offset
// (a failpoint of the node's clock, internal/clock: libfaketime cannot
// move a static Go binary's clock) and, at the heal, back. Before the jump
// it takes a lease and makes an idempotent put; before setting the clock
// back it checks, through the leader, that the lease is still alive and
// that the put sent again with its idempotency key is answered from the
// first attempt — a leader stamping commands with its jumped clock would
// have ended both.
func ClockJump(offset time.Duration) Fault {
	var victim *nemesis.Node
	var probe clockProbe
	return Fault{
		Name:    fmt.Sprintf("the leader's wall clock jumps %s, then back", signed(offset)),
		Promise: promiseClock,
		Inject: func(c *nemesis.Cluster) (string, error) {
			i := leader(c)
			victim = c.Nodes[i]
			var err error
			if probe, err = newClockProbe(c.Admin(i), victim.ID); err != nil {
				return "", fmt.Errorf("clock probe before the jump: %w", err)
			}
			return fmt.Sprintf("%s: wall clock %s", victim.ID, signed(offset)), victim.SetClockOffset(offset)
		},
		Heal: func(c *nemesis.Cluster) error {
			err := errors.Join(probe.check(c.Admin(leader(c))), jumpReported(c, victim.ID))
			return errors.Join(err, victim.SetClockOffset(0))
		},
	}
}

// signed writes d with its sign.
func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// jumpReported checks that the cluster events hold node's clock_jump.
func jumpReported(c *nemesis.Cluster, node string) error {
	var evs []client.ClusterEvent
	_, err := retry(func(ctx context.Context, attempt int) error {
		var err error
		evs, err = c.Admin(attempt % len(c.Nodes)).ClusterEvents(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("cluster events: %w", err)
	}
	for _, e := range evs {
		if e.Kind == "clock_jump" && e.Node == node {
			return nil
		}
	}
	return fmt.Errorf("no clock_jump event of %s among %d cluster events", node, len(evs))
}

// clockProbe is a lease and an idempotent put made before a clock jump.
type clockProbe struct {
	lease   uint64
	key     string
	idemKey string
	version uint64
}

// newClockProbe takes a lease and puts a key on it with an idempotency key.
func newClockProbe(cl *client.Client, tag string) (clockProbe, error) {
	p := clockProbe{key: "clock-probe/" + tag, idemKey: fmt.Sprintf("clock-probe-%s-%d", tag, time.Now().UnixNano())}
	_, err := retry(func(ctx context.Context, _ int) error {
		l, err := cl.LeaseGrant(ctx, probeLeaseTTL)
		p.lease = l.ID
		return err
	})
	if err != nil {
		return p, fmt.Errorf("lease: %w", err)
	}
	p.version, err = p.put(cl)
	return p, err
}

// put puts the probe's key under its idempotency key.
func (p clockProbe) put(cl *client.Client) (uint64, error) {
	var v uint64
	_, err := retry(func(ctx context.Context, _ int) error {
		var err error
		v, err = cl.KVPut(ctx, p.key, []byte("probe"), client.PutOptions{IdempotencyKey: p.idemKey, Lease: p.lease})
		return err
	})
	return v, err
}

// check reports a lease ended early or a retry applied twice.
func (p clockProbe) check(cl *client.Client) error {
	var errsOut []error
	_, err := retry(func(ctx context.Context, _ int) error {
		l, err := cl.LeaseGet(ctx, p.lease)
		if err == nil && l.RemainingMs <= 0 {
			errsOut = append(errsOut, fmt.Errorf("the %v lease taken before the jump has ended", probeLeaseTTL))
		}
		return err
	})
	if err != nil {
		errsOut = append(errsOut, fmt.Errorf("the %v lease taken before the jump: %w", probeLeaseTTL, err))
	}
	if v, err := p.put(cl); err != nil {
		errsOut = append(errsOut, fmt.Errorf("the put retried after the jump: %w", err))
	} else if v != p.version {
		errsOut = append(errsOut, fmt.Errorf("the put retried after the jump with its idempotency key applied again: version %d, first %d", v, p.version))
	}
	return errors.Join(errsOut...)
}

// ClockAheadRestart restarts a follower on a machine whose wall clock is
// offset from the others' and then makes it the leader (by killing the
// leader, and again, until it wins an election): a node that stamped its
// own wall clock would end leases and idempotency records early (ahead)
// or late (behind). The same probe as ClockJump checks it took the
// cluster's time at start.
func ClockAheadRestart(offset time.Duration) Fault {
	var victim *nemesis.Node
	var probe clockProbe
	return Fault{
		Name:    fmt.Sprintf("a follower restarted with its wall clock %s, then made the leader", signed(offset)),
		Promise: promiseClock,
		Inject: func(c *nemesis.Cluster) (string, error) {
			l := leader(c)
			vi := (l + 1) % len(c.Nodes)
			victim = c.Nodes[vi]
			var err error
			if probe, err = newClockProbe(c.Admin(l), victim.ID); err != nil {
				return "", fmt.Errorf("clock probe before the restart: %w", err)
			}
			victim.Kill()
			if err := victim.SetClockOffset(offset); err != nil {
				return "", err
			}
			if err := victim.Start(); err != nil {
				return "", err
			}
			c.WaitReady(victim, time.Minute)
			kills, err := makeLeader(c, vi)
			return fmt.Sprintf("%s restarted with its wall clock %s; leads after %d leader kills", victim.ID, signed(offset), kills), err
		},
		Heal: func(c *nemesis.Cluster) error {
			err := errors.Join(probe.check(c.Admin(leader(c))), jumpReported(c, victim.ID))
			return errors.Join(err, victim.SetClockOffset(0))
		},
	}
}

// makeLeader kills and restarts the data partition's leader until node vi
// leads it (an election between the others picks it about every other
// time), at most 12 times, and returns how many kills it took.
func makeLeader(c *nemesis.Cluster, vi int) (int, error) {
	for kills := 0; kills < 12; kills++ {
		l := waitLeader(c, -1)
		if l == vi {
			return kills, nil
		}
		if l < 0 {
			return kills, errors.New("no leader")
		}
		n := c.Nodes[l]
		n.Kill()
		next := waitLeader(c, l)
		if err := n.Start(); err != nil {
			return kills, err
		}
		c.WaitReady(n, time.Minute)
		if next == vi {
			return kills + 1, nil
		}
	}
	return 12, fmt.Errorf("%s did not win an election in 12 leader kills", c.Nodes[vi].ID)
}

// waitLeader waits up to 20 s for a running node to name a leader of the
// data partition other than not, and returns it (-1 if none).
func waitLeader(c *nemesis.Cluster, not int) int {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range c.Nodes {
			if i == not || !n.Running() {
				continue
			}
			if l := c.Leader(i, dataPartition); l >= 0 && l != not {
				return l
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return -1
}
