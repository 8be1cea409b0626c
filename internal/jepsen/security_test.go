//go:build nemesis

package jepsen_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/jepsen"
	"github.com/parley-chat/parley/internal/nemesis"
)

// Security rows, on a cluster with the default per-user limits: a node of
// another cluster (another CA) is refused at the socket; a flood of posts
// from one user is rate-limited (429) while another user's posts go
// through. (Revocation under partition: the session-* rows.)
func TestNemesis_Security(t *testing.T) {
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: 3, Spare: 1})
	t.Run("security-foreign-ca", func(t *testing.T) { foreignCA(t, c) })
	t.Run("security-flood", func(t *testing.T) { flood(t, c) })
}

// foreignCA starts a one-node cluster of its own on the spare host, points
// it at this cluster (--join), and dials this cluster's port with a
// certificate of another CA: nothing is let in, the refusals are audited,
// the cluster lists only its members and keeps serving.
func foreignCA(t *testing.T, c *nemesis.Cluster) {
	const name = "security-foreign-ca"
	r := jepsen.Result{Row: name, Workload: "cluster port", Nodes: len(c.Nodes), Linearizable: "n/a", Command: command(name),
		Fault:   "a node of another cluster (certificate from another CA) pointed at this one",
		Promise: "only a node holding a certificate of this cluster's CA gets in; everything else is refused at the handshake and audited"}
	start := time.Now()
	other := c.Standalone(len(c.Nodes)+1, "intruder")
	other.Kill()
	if err := other.StartWith("--join", c.Nodes[0].ClusterAddr()); err != nil {
		t.Fatal(err)
	}
	accepted, err := jepsen.ForeignCertificate(c.Nodes[0].ClusterAddr(), "n2", 20)
	if err != nil {
		t.Fatal(err)
	}
	r.Ops, r.Violations = 20, accepted
	time.Sleep(5 * time.Second) // the intruder's gossip contacts
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := c.Admin(0).Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.ID == "intruder" {
			r.Violations++
			t.Errorf("the cluster lists the intruder: %+v", n)
		}
	}
	audit, err := c.Admin(0).Audit(ctx, client.AuditQuery{Since: start})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range audit.Events {
		if e.Outcome == "refused" && (e.Kind == "internal_call_refused" || e.Kind == "gossip_refused") {
			refused++
		}
	}
	if refused == 0 {
		r.Violations++
		t.Errorf("no refusal audited: %+v", audit.Events)
	}
	if _, err := c.Admin(1).KVPut(ctx, name, []byte("still serving"), client.PutOptions{}); err != nil {
		r.Violations++
		t.Errorf("the cluster stopped serving: %v", err)
	}
	r.Detail = fmt.Sprintf("%d foreign handshakes, %d accepted; %d refusals audited; %d members listed", 20, accepted, refused, len(st.Nodes))
	finish(t, r)
}

// flood: one user posts as fast as eight clients can, another posts every
// 200 ms; the first gets 429s, the second is never refused.
func flood(t *testing.T, c *nemesis.Cluster) {
	const name = "security-flood"
	r := jepsen.Result{Row: name, Workload: "room posts, two users", Nodes: len(c.Nodes), Linearizable: "n/a", Command: command(name),
		Fault:   "one user floods a room with posts (8 clients, every node)",
		Promise: "the flooder is refused with 429 past its limit (60 posts per 10 s by default) before any work; another user's posts are not refused or starved"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	room := strings.ReplaceAll(name, "-", "")
	if _, err := c.Admin(0).CreateRoom(ctx, client.RoomSpec{Name: room}); err != nil {
		t.Fatal(err)
	}
	users := map[string][]*client.Client{}
	for _, u := range []string{"flooder", "victim"} {
		if _, err := c.Nodes[0].Client("").Register(ctx, u, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
		s, err := c.Nodes[0].Client("").Login(ctx, u, "correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes {
			users[u] = append(users[u], n.Client(s.Token))
		}
		if _, err := users[u][0].JoinRoom(ctx, room, ""); err != nil {
			t.Fatal(err)
		}
	}
	f := jepsen.Flood(users["flooder"], users["victim"], room, 8, 8*time.Second)
	limited, floodOK, victimFailed := f.Limited, f.Accepted, f.VictimFailed
	r.Ops, r.Acked = limited+floodOK+f.VictimPosts, floodOK+f.VictimPosts-len(victimFailed)
	r.Violations = len(victimFailed)
	if limited == 0 {
		r.Violations++
		t.Errorf("the flood was never refused with 429 (%d posts accepted)", floodOK)
	}
	if len(victimFailed) > 0 {
		t.Errorf("%d of the victim's posts failed, first: %v", len(victimFailed), victimFailed[0])
	}
	r.Detail = fmt.Sprintf("flooder: %d posts accepted, %d refused with 429; victim: %d of %d posts failed", floodOK, limited, len(victimFailed), f.VictimPosts)
	finish(t, r)
}

// finish records a security row and fails t when it did not pass.
func finish(t *testing.T, r jepsen.Result) {
	t.Helper()
	r.Verdict()
	line, err := jepsen.Record(r)
	if err != nil {
		t.Errorf("record the result: %v", err)
	}
	t.Logf("result: %s", line)
	if !r.Pass {
		t.Errorf("row %s failed: %s", r.Row, r.Detail)
	}
}
