package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/parley-chat/parley/client"
)

// runLeaseGrant is `parley kv lease grant TTL`.
func runLeaseGrant(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "TTL [flags]", `
Create a lease of TTL (a duration such as 30s) and print its id. Keys put
with --lease ID are deleted when the lease expires (no keep-alive within
TTL) or is revoked.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	ttl, err := time.ParseDuration(pos[0])
	if err != nil {
		return usagef(path, "TTL %q: want a duration such as 30s", pos[0])
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var l client.Lease
	if err := retry(ctx, func() (err error) { l, err = c.LeaseGrant(ctx, ttl); return err }); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout, l.ID)
	return nil
}

// leaseArg parses a lease id argument.
func leaseArg(path, s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, usagef(path, "lease id %q: want a number", s)
	}
	return id, nil
}

// runLeaseKeepAlive is `parley kv lease keepalive ID`.
func runLeaseKeepAlive(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var every time.Duration
	fs := newFlagSet(path, "ID [flags]", `
Renew lease ID for its TTL. With --every, keep renewing at that interval
until interrupted (a third of the TTL is a good choice).`)
	addClientFlags(fs, &co)
	fs.DurationVar(&every, "every", 0, "renew every `interval` until interrupted")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := leaseArg(path, pos[0])
	if err != nil {
		return err
	}
	c := co.newClient()
	for {
		cctx, cancel := context.WithTimeout(ctx, co.Timeout)
		var l client.Lease
		err := retry(cctx, func() (err error) { l, err = c.LeaseKeepAlive(cctx, id); return err })
		cancel()
		if err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "lease %d renewed for %v\n", l.ID, time.Duration(l.TTLMs)*time.Millisecond)
		if every <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// leaseCall parses the arguments of a command on one lease (ID and the
// client flags) and runs call with a signed-in client, retrying within the
// timeout.
func leaseCall(ctx context.Context, e *Env, path, about string, args []string, call func(ctx context.Context, c *client.Client, id uint64) error) error {
	var co clientOptions
	fs := newFlagSet(path, "ID [flags]", about)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := leaseArg(path, pos[0])
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	return retry(ctx, func() error { return call(ctx, c, id) })
}

// runLeaseInfo is `parley kv lease info ID`.
func runLeaseInfo(ctx context.Context, e *Env, path string, args []string) error {
	var l client.Lease
	err := leaseCall(ctx, e, path, "Print lease ID's TTL and the time it has left.", args, func(ctx context.Context, c *client.Client, id uint64) (err error) {
		l, err = c.LeaseGet(ctx, id)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "lease %d: ttl %v, %v left\n", l.ID, time.Duration(l.TTLMs)*time.Millisecond, time.Duration(l.RemainingMs)*time.Millisecond)
	return nil
}

// runLeaseRevoke is `parley kv lease revoke ID`.
func runLeaseRevoke(ctx context.Context, e *Env, path string, args []string) error {
	return leaseCall(ctx, e, path, "End lease ID now, deleting every key attached to it.", args, func(ctx context.Context, c *client.Client, id uint64) error {
		return c.LeaseRevoke(ctx, id)
	})
}
