package jepsen

import (
	"fmt"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/nemesis"
)

// rebuildItself starts n, whose data directory is what ("quarantined",
// "stale"), again with --rebuild-quarantined, waits until it serves, and
// checks that its log says it set the directory aside.
func rebuildItself(c *nemesis.Cluster, n *nemesis.Node, what string) error {
	if err := c.RebuildSelf(n); err != nil {
		return err
	}
	c.WaitReady(n, 2*time.Minute)
	if log := n.Log(20000); !strings.Contains(log, "its contents are set aside") {
		return fmt.Errorf("%s serves again, but its log does not say it set its %s directory aside:\n%s", n.ID, what, log)
	}
	return nil
}
