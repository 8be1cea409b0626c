//go:build nemesis

package jepsen_test

import (
	"os"
	"testing"

	"github.com/parley-chat/parley/internal/jepsen"
	"github.com/parley-chat/parley/internal/nemesis"
)

// A follower restarted from an old copy of its data directory, with the
// only up-to-date replica cut off, must not bring back old state: the KV
// history stays linearizable and no acknowledged put is lost.
//
// It fails today (docs/RELIABILITY.md, Findings): it runs only when asked
// for by name (scripts/nemesis kv-stale-datadir) or with
// PARLEY_NEMESIS_KNOWN_BUGS=1.
func TestNemesis_StaleData(t *testing.T) {
	if os.Getenv("PARLEY_NEMESIS_KNOWN_BUGS") == "" {
		t.Skip("known bug: after a follower restarts from an old copy of its data directory while the leader is cut off, the old leader never catches up and partition 1 stays unverifiable (docs/RELIABILITY.md, Findings); run scripts/nemesis kv-stale-datadir")
	}
	_, hold := size()
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: 3, Args: noLimits})
	const name = "kv-stale-datadir"
	runRows(t, c, []jepsen.Row{{Name: name, Fault: jepsen.StaleDataDir(t.TempDir(), hold/2), Hold: hold / 2, Clients: 8,
		Workload: jepsen.NewKV(clients(c), name+"/", 20)}})
}
