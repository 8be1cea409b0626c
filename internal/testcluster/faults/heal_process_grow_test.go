package faults_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// balanced checks, through the cluster status, that the given nodes hold
// partition replicas and lead partitions within one of each other.
func (pc *procCluster) balanced(nodes []string) error {
	st, err := pc.status()
	if err != nil {
		return err
	}
	if err := placedOnly(st, nodes); err != nil {
		return err
	}
	reps, leads := map[string]int{}, map[string]int{}
	for _, n := range st.Nodes {
		reps[n.ID], leads[n.ID] = n.Replicas, n.Leaders
	}
	for _, counts := range []map[string]int{reps, leads} {
		lo, hi := 1<<30, 0
		for _, id := range nodes {
			lo, hi = min(lo, counts[id]), max(hi, counts[id])
		}
		if hi-lo > 1 {
			return fmt.Errorf("replicas %v, leaders %v", reps, leads)
		}
	}
	return nil
}

// admin sends an admin request through process i.
func (pc *procCluster) admin(i int, method, path string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+pc.procs[i].http+path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+pc.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		pc.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Status + " " + string(b)
}

// Three processes grow to six by joining one at a time under load:
// replicas and leaders end within one per node each time. Then one is
// drained under load and removed: the clients see no error they could not
// retry, and the error rate and p99 latency of the drain are reported.
func TestHealProcess_GrowToSixThenDrainAndRemove(t *testing.T) {
	skipUnlessLong(t)
	pc := startProcCluster(t, 3)
	load := startKVLoad(t, "k", 8, 40, pc.up)
	load.waitAcks(200, time.Minute)
	for len(pc.procs) < 6 {
		pc.add()
		poll.Until(t, 2*time.Minute, fmt.Sprintf("%d nodes balanced", len(pc.procs)), func() error {
			return pc.balanced(pc.ids)
		})
		load.waitAcks(100, time.Minute)
	}
	grown := load.stop(pc.up()[0])

	load = startKVLoad(t, "d", 8, 40, func() []*client.Client { return pc.up()[:5] })
	load.waitAcks(200, time.Minute)
	start := time.Now()
	if code, body := pc.admin(0, http.MethodPost, "/api/v1/cluster/nodes/n6/drain"); code != http.StatusAccepted {
		t.Fatalf("drain n6: %s", body)
	}
	poll.Until(t, 2*time.Minute, "n6 drained", func() error {
		st, err := pc.status()
		if err != nil {
			return err
		}
		return placedOnly(st, pc.ids[:5])
	})
	drained := time.Since(start)
	if code, body := pc.admin(1, http.MethodDelete, "/api/v1/cluster/nodes/n6"); code != http.StatusOK {
		t.Fatalf("remove n6: %s", body)
	}
	rep := load.stop(pc.up()[0])
	pc.verify()
	t.Logf("growth 3->6: %d ok, %d retryable errors; drain of n6 took %v: %d ok, %d retryable errors (%.2f%%), p99 %v",
		grown.ok, grown.fails, drained.Round(100*time.Millisecond), rep.ok, rep.fails,
		100*float64(rep.fails)/float64(max(1, rep.ok+rep.fails)), rep.p99)
}

// verify runs `cluster verify` (POST /api/v1/cluster/verify) through a
// running process until every replica on a running node reports (replicas
// being added may lag for a moment; a dead node's metadata learner stays in
// the map until the node is removed, and cannot answer) and fails the test
// on any mismatch.
func (pc *procCluster) verify() {
	t := pc.t
	t.Helper()
	down := map[string]bool{}
	pc.mu.Lock()
	for i, d := range pc.down {
		down[pc.ids[i]] = d
	}
	pc.mu.Unlock()
	poll.Until(t, time.Minute, "cluster verify: every replica equal", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := pc.up()[0].Verify(ctx)
		if err != nil {
			return err
		}
		if rep.Mismatches > 0 {
			t.Fatalf("cluster verify: %d groups with replicas that disagree: %+v", rep.Mismatches, rep.Partitions)
		}
		for _, p := range rep.Partitions {
			for _, r := range p.Replicas {
				if r.Error != "" && !down[r.Node] {
					return fmt.Errorf("group %d: replica on %s not verified yet: %s", p.Group, r.Node, r.Error)
				}
			}
		}
		return nil
	})
}
