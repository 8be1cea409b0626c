package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/client"
)

// runClusterWait is `parley cluster wait --replicated`.
func runClusterWait(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var replicated bool
	var maxWait, interval time.Duration
	fs := newFlagSet(path, "--replicated [flags]", `
Wait until the cluster is in the state asked for, then exit 0; exit 1 when
--max-wait passes first. With --replicated: every partition has a leader, no
membership change in flight, and as many voters as the replication factor
(fewer when the cluster has fewer nodes) recently active and within 64
entries of their leader — the under_replicated flag of GET /api/v1/cluster.
It prints the partitions still under-replicated when their number changes,
on standard error. Scripts run it after starting, restarting or adding a
node, before touching the next one.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&replicated, "replicated", false, "wait until no partition is under-replicated")
	fs.DurationVar(&maxWait, "max-wait", 10*time.Minute, "give up after this `duration`")
	fs.DurationVar(&interval, "interval", time.Second, "poll the cluster status this `often`")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if !replicated {
		return usagef(path, "say what to wait for: --replicated")
	}
	if interval <= 0 || maxWait <= 0 {
		return usagef(path, "--max-wait and --interval must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	return waitReplicated(ctx, e, &co, interval)
}

// waitReplicated polls the cluster status until no partition is
// under-replicated. A failed poll (the node asked may be the one
// restarting) is reported and retried; when ctx ends, the error names the
// partitions still under-replicated at the last answer, or the last
// failure when there was no answer.
func waitReplicated(ctx context.Context, e *Env, co *clientOptions, interval time.Duration) error {
	last, lastErr := -1, error(nil)
	for {
		var st *client.ClusterStatus
		err := callServer(ctx, co, false, func(ctx context.Context, c *client.Client) (err error) {
			st, err = c.Cluster(ctx)
			return err
		})
		switch {
		case err == nil:
			under := st.UnderReplicated()
			if len(st.Partitions) > 0 && len(under) == 0 {
				fmt.Fprintf(e.Stdout, "all %s fully replicated\n", plural(len(st.Partitions), "partition"))
				return nil
			}
			if len(under) != last {
				fmt.Fprintf(e.Stderr, "waiting: %d of %s under-replicated %v\n", len(under), plural(len(st.Partitions), "partition"), under)
				last = len(under)
			}
		case ctx.Err() == nil && (lastErr == nil || err.Error() != lastErr.Error()):
			fmt.Fprintf(e.Stderr, "waiting: %s\n", describe(err))
			lastErr = err
		}
		select {
		case <-ctx.Done():
			switch {
			case last >= 0:
				return fmt.Errorf("gave up waiting for full replication: %d partition(s) still under-replicated", last)
			case lastErr != nil:
				return fmt.Errorf("gave up waiting for full replication: %s", describe(lastErr))
			}
			return errors.New("gave up waiting for full replication: no answer within --max-wait")
		case <-time.After(interval):
		}
	}
}
