//go:build nemesis

package jepsen_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/jepsen"
	"github.com/parley-chat/parley/internal/nemesis"
)

// TestMain removes the binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	nemesis.RemoveBinary()
	os.Exit(code)
}

// longForm reports whether PARLEY_NEMESIS_LONG asks for the long form: five
// nodes, faults held 30 s instead of 6 s.
func longForm() bool {
	b, _ := strconv.ParseBool(os.Getenv("PARLEY_NEMESIS_LONG"))
	return b
}

// size returns the number of nodes and how long faults are held.
func size() (nodes int, hold time.Duration) {
	if longForm() {
		return 5, 30 * time.Second
	}
	return 3, 6 * time.Second
}

// noLimits turns off the per-user rate limits the workloads would hit
// (they post and send as one user); the flood row keeps them.
var noLimits = []string{"--limit-posts", "off", "--limit-queue-sends", "off", "--limit-link-creates", "off"}

// clients returns one client per node, signed in as the admin.
func clients(c *nemesis.Cluster) []*client.Client {
	out := make([]*client.Client, len(c.Nodes))
	for i := range c.Nodes {
		out[i] = c.Admin(i)
	}
	return out
}

// command is how a row is run alone.
func command(row string) string { return "scripts/nemesis " + row }

// kvRow is a row of fault f under the KV workload (8 clients, 20 keys
// named after the row), held for hold.
func kvRow(c *nemesis.Cluster, name string, f jepsen.Fault, hold time.Duration) jepsen.Row {
	return jepsen.Row{Name: name, Fault: f, Hold: hold, Clients: 8, Workload: jepsen.NewKV(clients(c), name+"/", 20)}
}

// runRows runs rows on one cluster, each as a subtest named after it.
func runRows(t *testing.T, c *nemesis.Cluster, rows []jepsen.Row) {
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			row.Command = command(row.Name)
			row.Run(t, c)
		})
	}
}
