package testcluster_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-chat/parley/client"
)

// Stats reports every node, counts the requests a node answered, and counts
// the link cache's hits where redirects were served.
func TestCluster_Stats(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	cl := c.Client(1)
	before, err := cl.ClusterStats(apiCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(before.Nodes))
	}
	id := c.Node(1).ID()
	stat := func(rep *client.StatsReport) client.NodeStats {
		for _, n := range rep.Nodes {
			if n.Node == id {
				return n
			}
		}
		t.Fatalf("node %s missing from %+v", id, rep)
		return client.NodeStats{}
	}
	for _, n := range before.Nodes {
		if n.State != "alive" {
			t.Fatalf("node %s is %s", n.Node, n.State)
		}
	}
	link, err := cl.CreateLink(apiCtx(t), "https://example.com/stats", client.LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const gets = 20
	for i := range gets {
		if _, _, err := cl.KVGet(apiCtx(t), fmt.Sprintf("missing-%d", i), client.GetOptions{}); err == nil {
			t.Fatal("a missing key was found")
		}
	}
	for range 3 {
		if _, err := cl.Resolve(apiCtx(t), link.Code); err != nil {
			t.Fatal(err)
		}
	}
	after, err := cl.ClusterStats(apiCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	b, a := stat(before), stat(after)
	// The gets (404s count as answered), the link, the redirects, the stats call.
	if a.RequestsOK < b.RequestsOK+gets+4 {
		t.Fatalf("node %s answered %d requests ok before, %d after %d more", id, b.RequestsOK, a.RequestsOK, gets+4)
	}
	if a.RequestsPerSec <= 0 {
		t.Fatalf("request rate %v after a burst of requests", a.RequestsPerSec)
	}
	if a.CacheHits < b.CacheHits+2 || a.CacheHits+a.CacheMisses < b.CacheHits+b.CacheMisses+3 {
		t.Fatalf("link cache hits/misses %d/%d before, %d/%d after 3 redirects", b.CacheHits, b.CacheMisses, a.CacheHits, a.CacheMisses)
	}

	resp, err := http.Get("http://" + c.Node(1).HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := fmt.Sprintf(`parley_cache_hits_total{cache="link"} %d`, a.CacheHits)
	if !strings.Contains(string(body), want) {
		t.Fatalf("/metrics has no %q", want)
	}
}
