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
// on an empty data directory (kv-stale-datadir) or rebuilds itself
// (kv-stale-rebuild); the KV history stays linearizable and no
// acknowledged put is lost.
func TestNemesis_StaleData(t *testing.T) {
	_, hold := size()
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: 3, Args: noLimits})
	row := func(name string, fault jepsen.Fault) jepsen.Row {
		return jepsen.Row{Name: name, Fault: fault, Hold: hold / 2, Clients: 8, Workload: jepsen.NewKV(clients(c), name+"/", 20)}
	}
	runRows(t, c, []jepsen.Row{
		row("kv-stale-datadir", jepsen.StaleDataDir(t.TempDir(), hold/2)),
		row("kv-stale-rebuild", jepsen.StaleDataDirRebuild(t.TempDir(), hold/2)),
	})
}
