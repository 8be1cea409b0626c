package jepsen

import (
	"fmt"
	"path/filepath"
	"strings"
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
	return staleDataDir(dir, step, false)
}

// StaleDataDirRebuild is StaleDataDir with the node rebuilding itself: once
// refused, it is started again with --rebuild-quarantined, sets its stale
// directory aside and rejoins under its id, with no operator's removal.
func StaleDataDirRebuild(dir string, step time.Duration) Fault {
	return staleDataDir(dir, step, true)
}

func staleDataDir(dir string, step time.Duration, self bool) Fault {
	var old string
	var f, lag, l int
	fault := Fault{
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
			fn := c.Nodes[f]
			if err := c.HealAll(); err != nil {
				return err
			}
			if fn.Running() {
				// Parley did not find the old copy out: the checkers show
				// whether it served old state or lost acknowledged writes.
				return nil
			}
			// Refused as stale, as promised: rebuild it as an operator
			// would, on an empty data directory joined to its peers.
			if log := fn.Log(20000); !strings.Contains(log, "stale") {
				return fmt.Errorf("%s stopped, but not because its data was found stale:\n%s", fn.ID, log)
			}
			if !self {
				return c.Rebuild(fn)
			}
			fn.Kill() // reaps the exited process
			if err := fn.Start(); err != nil {
				return err
			}
			if !waitExit(fn, quarantineWithin) {
				return fmt.Errorf("%s started again on its stale data directory", fn.ID)
			}
			return rebuildItself(c, fn, "stale")
		},
	}
	if self {
		fault.Name += ", which rebuilds itself"
		fault.Promise = "a node restarted from an old copy of its data is refused and stops; started again with --rebuild-quarantined it sets the directory aside and rejoins under its id with no operator's removal, gets its replicas back from its peers, and never serves the old state"
	}
	return fault
}
