package testcluster_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

func TestCluster_SingleNodeKV(t *testing.T) {
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Partitions: 4, ReplicationFactor: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := c.Client(0)
	v, err := cl.KVPut(ctx, "a", []byte("hello"), client.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, ver, err := cl.KVGet(ctx, "a", client.GetOptions{})
	if err != nil || string(got) != "hello" || ver != v {
		t.Fatalf("get = %q v%d %v, want hello v%d", got, ver, err, v)
	}
}

func TestCluster_ForwardingShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	for _, tc := range []struct {
		name      string
		nodes, rf int
	}{
		{"3 nodes RF3", 3, 3},
		{"4 nodes RF3", 4, 3},
		{"3 nodes RF1", 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testcluster.New(t, testcluster.Options{Nodes: tc.nodes, Partitions: 8, ReplicationFactor: tc.rf, NoSync: true})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for k := 0; k < 40; k++ {
				key := "key-" + string(rune('a'+k%26)) + string(rune('0'+k/26))
				w := c.Client(k % tc.nodes)
				v, err := w.KVPut(ctx, key, []byte(key), client.PutOptions{})
				if err != nil {
					t.Fatalf("put %s via n%d: %v", key, k%tc.nodes+1, err)
				}
				for i := 0; i < tc.nodes; i++ {
					got, ver, err := c.Client(i).KVGet(ctx, key, client.GetOptions{})
					if err != nil || string(got) != key || ver != v {
						t.Fatalf("get %s via n%d = %q v%d %v, want v%d", key, i+1, got, ver, err, v)
					}
				}
			}
		})
	}
}

// Partition leaders end up spread over the nodes (within one per node),
// although the node that created the cluster led every group at first.
func TestPlacement_LeadersSpreadOverNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 9, NoSync: true})
	c.WaitLeadersBalanced(20 * time.Second)
}

// /metrics is open and reflects the node's traffic: requests by route and
// status, Raft rounds and fsyncs, every replica's applied index, where
// proposals spent their time, the WAL's fsyncs and the search indexes.
func TestMetrics_ExposedWithoutSignIn(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 1, Partitions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Client(0).KVPut(ctx, "k", []byte("v"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + c.Node(0).HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`parley_http_requests_total{code="200",route="PUT /api/v1/kv/{key...}"} 1`,
		`parley_raft_fsyncs_total`,
		`parley_partition_applied_index{group="0"}`,
		`parley_partition_applied_index{group="2"}`,
		`parley_raft_proposal_phase_seconds_count{phase="total"}`,
		`parley_raft_proposal_phase_seconds_count{phase="quorum"}`,
		`parley_storage_wal_fsyncs_total`,
		`parley_search_indexes{state="ready"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
