package jepsen

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/parley-chat/parley/internal/nemesis"
)

// StaleDataDir restarts a follower from an old copy of its data directory
// where that copy would matter most: the copy is taken (the follower
// killed, copied, restarted), the other follower is cut off while the
// leader and the follower acknowledge writes, then the follower is killed
// and put back to its old copy, the leader is cut off, and the old copy and
// the lagging follower — a majority without the latest writes — are left
// together for step. Parley must refuse to start the old copy, or keep it
// from voting and serving until it caught up: never elect a leader without
// acknowledged writes, never answer from the old state.
func StaleDataDir(dir string, step time.Duration) Fault {
	var old string
	var f, lag, l int
	return Fault{
		Name:    "restart of a follower from an old copy of its data directory, with the leader cut off",
		Promise: "a node restarted from an old copy of its data never serves the old state and never helps elect a leader without acknowledged writes: it is refused, or rebuilt from its peers",
		Inject: func(c *nemesis.Cluster) (string, error) {
			l = leader(c)
			f, lag = (l+1)%len(c.Nodes), (l+2)%len(c.Nodes)
			fn := c.Nodes[f]
			fn.Kill()
			old = filepath.Join(dir, fn.ID+"-old")
			if err := fn.CopyData(old); err != nil {
				return "", err
			}
			if err := fn.Start(); err != nil {
				return "", err
			}
			c.WaitReady(fn, time.Minute)
			if err := c.Net.Isolate(host(lag)); err != nil {
				return "", err
			}
			time.Sleep(step) // writes acknowledged by the leader and fn only
			fn.Kill()
			if err := fn.ReplaceData(old); err != nil {
				return "", err
			}
			if err := c.Net.Heal(); err != nil {
				return "", err
			}
			if err := c.Net.Isolate(host(l)); err != nil {
				return "", err
			}
			if err := fn.Start(); err != nil {
				return "", err
			}
			return fmt.Sprintf("%s restarted from its old copy; %s lagging; leader %s cut off", fn.ID, c.Nodes[lag].ID, c.Nodes[l].ID), nil
		},
		Heal: func(c *nemesis.Cluster) error {
			if !c.Nodes[f].Running() {
				// Refused to start from the old copy: that is allowed; put it
				// back in service as an operator would (a fresh start from its
				// peers is beyond this row).
				return fmt.Errorf("%s did not start from its old copy:\n%s", c.Nodes[f].ID, c.Nodes[f].Log(3000))
			}
			return c.HealAll()
		},
	}
}
