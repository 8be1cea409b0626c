package testcluster_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// After writes, every replica of every partition written to reports lag
// samples over the window, one leader per partition, and the apply lag
// histogram is in /metrics.
func TestCluster_Lag(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	cl := c.Client(0)
	written := map[uint64]bool{}
	for i := range 30 {
		key := fmt.Sprintf("lag-%d", i)
		if _, err := cl.KVPut(apiCtx(t), key, []byte("v"), client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		written[c.Node(0).Router().PartitionOf(key)] = true
	}
	var rep *client.LagReport
	eventually(t, 10*time.Second, "lag samples on every replica", func() error {
		var err error
		if rep, err = cl.ClusterLag(apiCtx(t)); err != nil {
			return err
		}
		for p := range written {
			replicas, leaders := 0, 0
			for _, r := range rep.Replicas {
				if r.Group != p || r.Samples == 0 {
					continue
				}
				replicas++
				if r.Role == "leader" {
					leaders++
				}
			}
			if replicas != 3 || leaders != 1 {
				return fmt.Errorf("partition %d: %d replicas with samples, %d leaders: %+v", p, replicas, leaders, rep.Replicas)
			}
		}
		return nil
	})
	if len(rep.Unreachable) != 0 || rep.WindowMs <= 0 {
		t.Fatalf("unreachable %v, window %d ms", rep.Unreachable, rep.WindowMs)
	}
	for _, r := range rep.Replicas {
		q := r.LagMs
		if q.P50 < 0 || q.P50 > q.P99 || q.P99 > q.Max || r.LagEntries.P50 > r.LagEntries.Max {
			t.Fatalf("replica %s of %d: quantiles out of order: %+v", r.Node, r.Group, r)
		}
		if r.Replica == 0 || r.Node == "" {
			t.Fatalf("replica without id or node: %+v", r)
		}
	}

	resp, err := http.Get("http://" + c.Node(1).HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`parley_replica_apply_lag_seconds_count{role="follower"}`, `parley_replica_apply_lag_seconds_bucket{role=`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics has no %s", want)
		}
	}
}
