package jepsen

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/nemesis"
)

// Workload is what clients do during a row: Start starts n clients, Stop
// stops them, Check reads the final state through via and fills r.
type Workload interface {
	Name() string
	Start(n int)
	Stop()
	Check(via *client.Client, vizPath string, r *Result) error
}

// Fault is what a row does to the cluster: Inject starts the fault (and
// may say how, in its detail), Heal ends it.
type Fault struct {
	Name    string
	Promise string
	Inject  func(c *nemesis.Cluster) (detail string, err error)
	Heal    func(c *nemesis.Cluster) error
	// Seen, if set, says what the fault did, once healed (appended to the
	// row's detail): e.g. how many operations a faulty disk failed.
	Seen func() string
}

// Row is one row of the table: a fault under a workload, held for Hold.
type Row struct {
	Name     string
	Fault    Fault
	Workload Workload
	Clients  int
	Hold     time.Duration
	// Command reproduces the row.
	Command string
}

// Run runs a row on c: the workload runs a second, the fault is injected
// and held, then healed; the recovery time is measured, the workload runs
// a second more and is checked once the cluster is healthy again. The
// result is recorded (Record) and returned; t fails when the row does not
// pass.
func (row Row) Run(t *testing.T, c *nemesis.Cluster) Result {
	t.Helper()
	r := Result{Row: row.Name, Fault: row.Fault.Name, Nodes: len(c.Nodes), Promise: row.Fault.Promise, Command: row.Command}
	row.Workload.Start(row.Clients)
	time.Sleep(time.Second)
	detail, err := row.Fault.Inject(c)
	if err != nil {
		row.Workload.Stop()
		t.Fatalf("inject %s: %v", row.Fault.Name, err)
	}
	r.Detail = detail
	time.Sleep(row.Hold)
	if err := row.Fault.Heal(c); err != nil {
		row.Workload.Stop()
		t.Fatalf("heal %s: %v", row.Fault.Name, err)
	}
	if row.Fault.Seen != nil {
		r.Detail += "; " + row.Fault.Seen()
	}
	rec, err := Recovery(c, row.Name, 2*time.Minute)
	r.RecoveryMs = rec.Milliseconds()
	if err != nil {
		r.RecoveryMs = -1
		r.Detail += fmt.Sprintf(" no recovery: %v", err)
	}
	time.Sleep(time.Second)
	row.Workload.Stop()
	c.WaitHealthy(2 * time.Minute)
	if err := row.Workload.Check(c.Admin(0), t.TempDir()+"/history.html", &r); err != nil {
		r.Detail += " check: " + err.Error()
		t.Errorf("check: %v", err)
	}
	if err := verifyReplicas(c); err != nil {
		r.Detail += " " + err.Error()
		r.Lost = max(r.Lost, 1)
		t.Errorf("replicas: %v", err)
	}
	r.Detail += " disk used:"
	for _, n := range c.Nodes {
		used, _ := n.DiskUsed()
		r.Detail += fmt.Sprintf(" %s %d MiB", n.ID, used>>20)
	}
	r.Verdict()
	line, err := Record(r)
	if err != nil {
		t.Errorf("record the result: %v", err)
	}
	t.Logf("result: %s", line)
	if !r.Pass {
		t.Errorf("row %s failed: %d lost, %d duplicated, linearizable %s, recovery %d ms: %s", row.Name, r.Lost, r.Duplicated, r.Linearizable, r.RecoveryMs, r.Detail)
	}
	return r
}

// verifyReplicas waits (up to a minute) for every partition's replicas to
// match (POST /api/v1/cluster/verify); replicas still catching up are
// retried.
func verifyReplicas(c *nemesis.Cluster) error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.Verify(ctx, 0)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Recovery measures the time until a write and a read through every node
// succeed, each node tried in parallel, from now (the heal).
func Recovery(c *nemesis.Cluster, row string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	var worst time.Duration
	var mu sync.Mutex
	for i := range c.Nodes {
		wg.Go(func() {
			api := c.Admin(i)
			key := fmt.Sprintf("recovery/%s/%s", row, c.Nodes[i].ID)
			for n := 0; ; n++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := api.KVPut(ctx, key, []byte(fmt.Sprint(n)), client.PutOptions{})
				if err == nil {
					_, _, err = api.KVGet(ctx, key, client.GetOptions{})
				}
				cancel()
				if err == nil {
					mu.Lock()
					worst = max(worst, time.Since(start))
					mu.Unlock()
					return
				}
				if time.Since(start) > within {
					errs[i] = fmt.Errorf("%s: %w", c.Nodes[i].ID, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return time.Since(start), err
		}
	}
	return worst, nil
}
