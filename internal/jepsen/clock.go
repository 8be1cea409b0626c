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
