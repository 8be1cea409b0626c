package testcluster

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
)

// logRingLines is how many log lines of its nodes a cluster keeps for a
// failure report.
const logRingLines = 4000

// logRing keeps the last log lines of a cluster's nodes, at debug level,
// so that a test that fails in CI (where nodes do not log to stderr) can
// show what the nodes were doing: why the placement controller did not
// promote a replica, which configuration change Raft ignored.
type logRing struct {
	mu    sync.Mutex
	lines []string
	next  int // where the next line goes once the ring is full
}

// Write takes one record: slog's text handler writes each in one call.
func (r *logRing) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.lines) < logRingLines {
		r.lines = append(r.lines, line)
	} else {
		r.lines[r.next] = line
		r.next = (r.next + 1) % logRingLines
	}
	return len(p), nil
}

// tail returns the newest n kept lines that contain one of keys, oldest
// first.
func (r *logRing) tail(n int, keys ...string) []string {
	r.mu.Lock()
	all := append(append([]string(nil), r.lines[r.next:]...), r.lines[:r.next]...)
	r.mu.Unlock()
	var out []string
	for _, l := range all {
		if slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(l, k) }) {
			out = append(out, l)
		}
	}
	return out[max(0, len(out)-n):]
}

// logger returns node id's logger: into the cluster's ring, and to stderr
// as well when PARLEY_TEST_LOG is set.
func (c *Cluster) logger(id string) *slog.Logger {
	var w io.Writer = &c.logs
	if os.Getenv("PARLEY_TEST_LOG") != "" {
		w = io.MultiWriter(&c.logs, os.Stderr)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test_node", id)
}

// Report is every running node's view of its replicas and of placement,
// with the nodes' recent log lines about it: for a test's failure message.
func (c *Cluster) Report() string {
	return c.raftReport() + c.placementReport()
}

// placementKeys pick the log lines that explain placement and membership:
// the controller's steps and failures, the leaders' configuration changes,
// Raft's elections and the changes it ignored, warnings and errors.
var placementKeys = []string{
	"placement", "configuration", "conf change", "became leader", "joint", "transfer",
	"level=WARN", "level=ERROR",
}

// placementReport is, for a failure message, what decides placement: each
// node's map (its groups' replicas and roles) and gossip's view of the
// others, and the nodes' recent log lines about placement.
func (c *Cluster) placementReport() string {
	nodes := c.nodesNow()
	var b strings.Builder
	for i, n := range nodes {
		if n == nil {
			continue
		}
		m := n.Map()
		if m == nil {
			fmt.Fprintf(&b, "node %d: no map\n", i+1)
			continue
		}
		fmt.Fprintf(&b, "node %d map (term %d):", i+1, m.Term)
		for _, g := range m.Groups {
			fmt.Fprintf(&b, " g%d[%s]", g.ID, replicaRoles(g))
		}
		b.WriteString("\n  gossip:")
		for _, nd := range m.Nodes {
			if nd.ID != n.ID() {
				fmt.Fprintf(&b, " %s=%s", nd.ID, n.MemberState(nd.ID))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("recent placement log lines:\n")
	for _, l := range c.logs.tail(300, placementKeys...) {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
