package jepsen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/nemesis"
)

// quarantineWithin bounds how long a node restarted on a flipped bit may
// serve before its start-up scrub finds the corruption and stops it.
const quarantineWithin = 30 * time.Second

// BitFlip flips one bit in a table file of a follower while it is stopped
// (restarted once first, so its recent writes are in tables: Pebble flushes
// the WAL it replays), then starts it on that directory. The follower must
// find the corruption (its start-up scrub reads every block and checks its
// checksum), stop, and refuse its directory; the heal rebuilds it from its
// peers on an empty data directory, as an operator would.
func BitFlip() Fault {
	return bitFlip(false)
}

// BitFlipRebuild is BitFlip healed by the node itself: restarted with
// --rebuild-quarantined, it sets its quarantined directory aside and joins
// again under its id, with no operator's removal.
func BitFlipRebuild() Fault {
	return bitFlip(true)
}

func bitFlip(self bool) Fault {
	var victim *nemesis.Node
	f := Fault{
		Name:    "a bit flipped in a table file of a follower",
		Promise: "a node whose store fails a checksum is quarantined: it stops, marks its data directory so that no start uses it again, never serves what it read, and is rebuilt from its peers; the others serve on",
		Inject: func(c *nemesis.Cluster) (string, error) {
			victim = c.Nodes[pick(c, false)]
			victim.Kill()
			if err := victim.Start(); err != nil {
				return "", err
			}
			c.WaitReady(victim, time.Minute)
			victim.Kill()
			file, off, err := victim.FlipBit(rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 11)))
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s: bit flipped in %s at byte %d, restarted", victim.ID, file, off), victim.Start()
		},
		Heal: func(c *nemesis.Cluster) error {
			if !waitExit(victim, quarantineWithin) {
				return fmt.Errorf("%s still runs %v after its restart on a flipped bit: the corruption was not found", victim.ID, quarantineWithin)
			}
			if log := victim.Log(20000); !strings.Contains(log, "quarantined") {
				return fmt.Errorf("%s stopped, but not because its store was quarantined:\n%s", victim.ID, log)
			}
			victim.Kill() // reaps the exited process
			if err := victim.Start(); err != nil {
				return err
			}
			if !waitExit(victim, quarantineWithin) {
				return fmt.Errorf("%s started again on its quarantined data directory", victim.ID)
			}
			if !self {
				return c.Rebuild(victim)
			}
			return rebuildItself(c, victim, "quarantined")
		},
	}
	if self {
		f.Name = "a bit flipped in a table file of a follower, which rebuilds itself"
		f.Promise = "a node whose store fails a checksum is quarantined and stops; started again with --rebuild-quarantined it sets the directory aside and rejoins under its id with no operator's removal, and gets its replicas back from its peers; the others serve on"
	}
	return f
}
