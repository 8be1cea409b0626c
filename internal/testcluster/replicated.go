package testcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// WaitReplicated waits up to within until the node c talks to reports no
// partition under-replicated (GET /api/v1/cluster, what `parley cluster
// wait --replicated` waits for): a new cluster is then fault-tolerant, and
// a restarted node has caught up. It fails t otherwise.
func WaitReplicated(t testing.TB, c *client.Client, within time.Duration) {
	t.Helper()
	poll.Until(t, within, "every partition fully replicated", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Cluster(ctx)
		if err != nil {
			return err
		}
		if under := st.UnderReplicated(); len(under) > 0 {
			return fmt.Errorf("partitions %v under-replicated", under)
		}
		return nil
	})
}
