package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// runClusterDrain is `parley cluster drain NODE`.
func runClusterDrain(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var noWait bool
	var wait, interval time.Duration
	fs := newFlagSet(path, "NODE [flags]", `
Move every replica off NODE (admin only), then follow the moves in GET
/api/v1/cluster, printing each as it starts and the partition replicas left
on NODE, until NODE holds none. A drained node can then be stopped and
removed with 'parley cluster remove NODE'. A drain that would leave a
partition without enough nodes is refused with the reason.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&noWait, "no-wait", false, "return once the drain has started")
	fs.DurationVar(&wait, "wait", 30*time.Minute, "give up following the drain after this `duration` (it goes on)")
	fs.DurationVar(&interval, "interval", time.Second, "poll the cluster map this `often`")
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	if interval <= 0 || wait <= 0 {
		return usagef(path, "--wait and --interval must be positive")
	}
	id := pos[0]
	var res client.DrainResult
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) (err error) {
		res, err = c.DrainNode(ctx, id)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "draining %s: %s planned\n", id, plural(len(res.Moves), "move"))
	if noWait {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return followDrain(ctx, e.Stdout, &co, id, interval)
}

// followDrain polls the cluster map until node id holds no replica and no
// move takes one off it, printing moves and the replica count as they
// change.
func followDrain(ctx context.Context, w io.Writer, co *clientOptions, id string, interval time.Duration) error {
	seen := map[client.Move]bool{}
	replicas := -1
	for {
		var st *client.ClusterStatus
		err := callServer(ctx, co, false, func(ctx context.Context, c *client.Client) (err error) {
			st, err = c.Cluster(ctx)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("stopped following the drain of %s (it goes on): %w", id, ctx.Err())
			}
			return err
		}
		moving := false
		for _, m := range st.Moves {
			if m.From != id && m.To != id {
				continue
			}
			moving = true
			if !seen[m] {
				seen[m] = true
				fmt.Fprintf(w, "partition %d: %s -> %s (%s)\n", m.Partition, dash(m.From), dash(m.To), m.Phase)
			}
		}
		left := 0
		found := false
		for _, n := range st.Nodes {
			if n.ID == id {
				left, found = n.Replicas, true
			}
		}
		if found && left != replicas {
			replicas = left
			fmt.Fprintf(w, "%s holds %s\n", id, plural(left, "partition replica"))
		}
		if !found || (left == 0 && !moving) {
			fmt.Fprintf(w, "%s is drained; remove it with: parley cluster remove %s\n", id, id)
			return nil
		}
		if err := sleepCtx(ctx, interval); err != nil {
			return fmt.Errorf("stopped following the drain of %s (it goes on): %w", id, err)
		}
	}
}

// runClusterRemove is `parley cluster remove NODE`.
func runClusterRemove(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	fs := newFlagSet(path, "NODE [flags]", `
Make the cluster forget NODE (admin only). Only a drained or dead node may be
removed; a node that still holds replicas is refused (conflict): drain it
first.`)
	addClientFlags(fs, &co)
	pos, err := parseClient(fs, &co, e, args, 1, 1)
	if err != nil {
		return err
	}
	err = callServer(ctx, &co, true, func(ctx context.Context, c *client.Client) error {
		return c.RemoveNode(ctx, pos[0])
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "removed %s\n", pos[0])
	return nil
}

// runClusterVerify is `parley cluster verify`.
func runClusterVerify(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "[flags]", `
Compare the replicas of every partition, and of the metadata group (shown as
"meta"), by a checksum of their state at the same applied index (admin only),
print one row per replica, and exit 1 when any group's replicas differ.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON, as POST /api/v1/cluster/verify returns it")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	var rep *client.VerifyReport
	err := callServer(ctx, &co, false, func(ctx context.Context, c *client.Client) (err error) {
		rep, err = c.Verify(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		err = printJSON(e.Stdout, rep)
	} else {
		err = writeVerify(e.Stdout, rep)
	}
	if err != nil {
		return err
	}
	if rep.Mismatches > 0 {
		return errors.New(verifySummary(rep))
	}
	return nil
}

// writeVerify prints a verify report: one row per replica, then a summary.
func writeVerify(w io.Writer, rep *client.VerifyReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tAPPLIED\tNODE\tREPLICA\tCHECKSUM\tMATCH")
	for _, p := range rep.Partitions {
		match := "yes"
		if !p.Match {
			match = "NO"
		}
		group := strconv.FormatUint(p.Group, 10)
		if p.Group == metaGroup {
			group = "meta"
		}
		for i, r := range p.Replicas {
			lead := fmt.Sprintf("%s\t%d", group, p.Applied)
			if i > 0 {
				lead = "\t"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", lead, r.Node, r.Replica, r.Checksum, match)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", verifySummary(rep))
	return err
}

// metaGroup is the id of the metadata group in verify reports
// (placement.MetaGroup): it holds the cluster map, and is no partition.
const metaGroup = 0

// verifySummary says which groups of rep matched, naming the metadata group
// apart from the partitions so that the count agrees with the partitions
// 'parley cluster status' shows: "16 partitions and the metadata group:
// every replica matches", "replicas differ in 1 of 16 partitions (3) and in
// the metadata group".
func verifySummary(rep *client.VerifyReport) string {
	parts, meta, metaBad := 0, false, false
	var bad []string
	for _, p := range rep.Partitions {
		switch {
		case p.Group == metaGroup:
			meta, metaBad = true, !p.Match
		case !p.Match:
			parts++
			bad = append(bad, strconv.FormatUint(p.Group, 10))
		default:
			parts++
		}
	}
	if len(bad) == 0 && !metaBad {
		checked := plural(parts, "partition")
		if meta {
			checked += " and the metadata group"
		}
		return checked + ": every replica matches"
	}
	var differ []string
	if len(bad) > 0 {
		differ = append(differ, fmt.Sprintf("in %d of %s (%s)", len(bad), plural(parts, "partition"), strings.Join(bad, ", ")))
	}
	if metaBad {
		differ = append(differ, "in the metadata group")
	}
	return "replicas differ " + strings.Join(differ, " and ")
}
