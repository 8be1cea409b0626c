package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/parley-chat/parley/client"
)

// runClusterStatus is `parley cluster status`.
func runClusterStatus(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var asJSON bool
	fs := newFlagSet(path, "[flags]", `
Print the cluster's nodes, then its partitions: leader, and every replica with
its role, applied index and lag behind the leader. A warning follows when a
partition is on two voters, which survive no node failure.`)
	addClientFlags(fs, &co)
	fs.BoolVar(&asJSON, "json", false, "print the status as JSON, as GET /api/v1/cluster returns it")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, co.Timeout)
	defer cancel()
	c := co.newClient()
	var st *client.ClusterStatus
	err := retry(ctx, func() (err error) {
		st, err = c.Cluster(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return writeClusterStatus(e.Stdout, st)
}

// writeClusterStatus prints st as two tables: nodes, then partitions with
// one row per replica.
func writeClusterStatus(w io.Writer, st *client.ClusterStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "cluster %s: %s, %s", st.ClusterID, plural(len(st.Nodes), "node"), plural(len(st.Partitions), "partition"))
	if st.Protocol > 0 { // 0: a server from before protocols were reported
		fmt.Fprintf(tw, ", protocol %d", st.Protocol)
	}
	fmt.Fprint(tw, "\n\n")
	fmt.Fprintln(tw, "NODE\tHTTP\tZONE\tSTATE\tSTANDBY\tREPLICAS\tLEADERS\tBUILD")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", n.ID, n.Addr, dash(n.Zone), n.State, yesNo(n.Standby), n.Replicas, n.Leaders, dash(termSafe(n.Build)))
	}
	fmt.Fprintln(tw, "\nPARTITION\tLEADER\tREPLICA\tROLE\tAPPLIED\tLAG\tLAG MS")
	for _, p := range st.Partitions {
		first := fmt.Sprintf("%d\t%s", p.ID, dash(p.Leader))
		if len(p.Replicas) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\n", first)
		}
		for i, r := range p.Replicas {
			lead := first
			if i > 0 {
				lead = "\t"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", lead, r.Node, r.Role, r.Applied, orUnknown(r.LagEntries), orUnknown(r.LagMs))
		}
	}
	if len(st.Moves) > 0 {
		fmt.Fprintln(tw, "\nMOVE\tFROM\tTO\tPHASE")
		for _, m := range st.Moves {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.Partition, dash(m.From), dash(m.To), m.Phase)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if two := twoVoters(st); len(two) > 0 {
		_, err := fmt.Fprintf(w, "\nwarning: %s on two voters: each stops taking writes while either of its nodes is down (a partition survives one failure from three voters up)\n",
			plural(len(two), "partition")+" "+idList(two))
		return err
	}
	return nil
}

// twoVoters lists the partitions with exactly two voters (the leader and
// one follower): a majority of two is both, so such a partition survives
// no node failure, no better than one voter and with twice the nodes to
// fail. A cluster of two nodes at any replication factor is in this state,
// as is a partition between its second and third replica.
func twoVoters(st *client.ClusterStatus) []uint64 {
	var out []uint64
	for _, p := range st.Partitions {
		voters := 0
		for _, r := range p.Replicas {
			if r.Role == "leader" || r.Role == "follower" {
				voters++
			}
		}
		if voters == 2 {
			out = append(out, p.ID)
		}
	}
	return out
}

// idList shows ids as a comma-separated list, runs of consecutive ids as
// first-last.
func idList(ids []uint64) string {
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		} else {
			parts = append(parts, fmt.Sprint(ids[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// dash shows an empty field as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// yesNo shows a boolean as yes or no.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// orUnknown shows a figure, or "?" when it is unknown (nil).
func orUnknown[T uint64 | int64](v *T) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprint(*v)
}
