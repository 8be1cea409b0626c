//go:build nemesis

package jepsen_test

import (
	"testing"

	"github.com/parley-chat/parley/internal/jepsen"
	"github.com/parley-chat/parley/internal/nemesis"
)

// Room history, queues and sessions under partitions and process faults:
// no acknowledged post or send lost, none twice, room history gap-free and
// identical on every node, every queued message received and acked once,
// and a logged-out token refused within its window by every node that
// talks with a majority.
func TestNemesis_Workloads(t *testing.T) {
	nodes, hold := size()
	args := append([]string{"--limit-logins-per-user", "off", "--rate-limit", "0"}, noLimits...)
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: nodes, Args: args})
	api := clients(c)
	room := func(name string) jepsen.Workload {
		w, err := jepsen.NewRoom(api, name)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	queue := func(name string) jepsen.Workload {
		w, err := jepsen.NewQueue(api, name)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	links := func(name string) jepsen.Workload { return jepsen.NewLinks(api, name) }
	stream := func(name string) jepsen.Workload {
		w, err := jepsen.NewStream(api, name)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	sessions := func(name string) jepsen.Workload {
		w, err := jepsen.NewSessions(c, name+"-u", 3)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	rows := []struct {
		name     string
		fault    jepsen.Fault
		workload func(string) jepsen.Workload
	}{
		{"room-partition-leader", jepsen.LeaderIsolated(), room},
		{"room-kill-leader", jepsen.KillLeader(), room},
		{"queue-partition-majority", jepsen.MajorityPartition(), queue},
		{"queue-pause-leader", jepsen.PauseLeader(), queue},
		{"queue-kill-leader", jepsen.KillLeader(), queue},
		{"session-partition-leader", jepsen.LeaderIsolated(), sessions},
		{"session-partition-minority", jepsen.MinorityPartition(), sessions},
		{"links-partition-leader", jepsen.LeaderIsolated(), links},
		{"links-kill-leader", jepsen.KillLeader(), links},
		{"stream-partition-leader", jepsen.LeaderIsolated(), stream},
		{"stream-kill-leader", jepsen.KillLeader(), stream},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			row := jepsen.Row{Name: r.name, Fault: r.fault, Hold: hold, Clients: 4, Workload: r.workload(r.name), Command: command(r.name)}
			row.Run(t, c)
		})
	}
}
