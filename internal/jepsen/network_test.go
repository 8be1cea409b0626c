//go:build nemesis

package jepsen_test

import (
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/jepsen"
	"github.com/parley-chat/parley/internal/nemesis"
)

// Every network and process fault under the KV workload: the history must
// be linearizable (porcupine), no acknowledged put lost, the replicas
// identical, and every node must serve again after the heal.
func TestNemesis_KV(t *testing.T) {
	nodes, hold := size()
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: nodes, Args: noLimits})
	faults := []struct {
		name  string
		fault jepsen.Fault
	}{
		{"kv-partition-minority", jepsen.MinorityPartition()},
		{"kv-partition-majority", jepsen.MajorityPartition()},
		{"kv-partition-leader", jepsen.LeaderIsolated()},
		{"kv-partition-bridge", jepsen.BridgePartition()},
		{"kv-partition-oneway", jepsen.OneWay()},
		{"kv-partition-flapping", jepsen.Flapping()},
		{"kv-loss", jepsen.Loss(0.2)},
		{"kv-delay", jepsen.Delay(50*time.Millisecond, 0.25)},
		{"kv-kill-leader", jepsen.KillLeader()},
		{"kv-pause-leader", jepsen.PauseLeader()},
		{"kv-disk-full-follower", jepsen.DiskFull(false)},
		{"kv-disk-full-leader", jepsen.DiskFull(true)},
		{"kv-torn-wal", jepsen.TornWAL()},
		{"kv-clock-forward-leader", jepsen.ClockJump(10 * time.Minute)},
		{"kv-clock-backward-leader", jepsen.ClockJump(-10 * time.Minute)},
		{"kv-clock-ahead-restart", jepsen.ClockAheadRestart(10 * time.Minute)},
		{"kv-bitflip-follower", jepsen.BitFlip()},
		{"kv-bitflip-rebuild", jepsen.BitFlipRebuild()},
	}
	var rows []jepsen.Row
	for _, f := range faults {
		rows = append(rows, kvRow(c, f.name, f.fault, hold))
	}
	runRows(t, c, rows)
}
