//go:build nemesis

package jepsen_test

import (
	"testing"

	"github.com/parley-chat/parley/internal/jepsen"
	"github.com/parley-chat/parley/internal/nemesis"
)

// A follower restarted from an old copy of its data directory, with the
// only up-to-date replica cut off, must not bring back old state: its peers
// refuse it as stale (internal/node/boot.go), it stops, and it is rebuilt
// on an empty data directory; the KV history stays linearizable and no
// acknowledged put is lost.
func TestNemesis_StaleData(t *testing.T) {
	_, hold := size()
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: 3, Args: noLimits})
	const name = "kv-stale-datadir"
	runRows(t, c, []jepsen.Row{{Name: name, Fault: jepsen.StaleDataDir(t.TempDir(), hold/2), Hold: hold / 2, Clients: 8,
		Workload: jepsen.NewKV(clients(c), name+"/", 20)}})
}
