//go:build nemesis

package nemesis_test

import (
	"context"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/nemesis"
)

// A cluster starts in its namespaces, secure by default; isolating a node
// makes the others see it unreachable, and healing brings it back.
func TestCluster_IsolateAndHeal(t *testing.T) {
	c := nemesis.NewCluster(t, nemesis.Options{Nodes: 3})
	if err := c.Net.Isolate(3); err != nil {
		t.Fatal(err)
	}
	poll := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			st, err := c.Admin(0).Cluster(ctx)
			cancel()
			if err == nil {
				for _, n := range st.Nodes {
					if n.ID == "n3" && n.Alive() == want {
						return
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("n3 alive=%v not seen: %v %+v", want, err, st)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	start := time.Now()
	poll(false)
	t.Logf("isolated n3 seen unreachable in %v", time.Since(start))
	if err := c.Net.Heal(); err != nil {
		t.Fatal(err)
	}
	poll(true)
	c.WaitHealthy(time.Minute)
}
