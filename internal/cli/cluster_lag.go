package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/client"
)

// lagSamples collects follower lag samples, grouped by the number of
// replicas of their partition and by node.
type lagSamples struct {
	byReplicas map[int]*lagSeries
	byNode     map[string]*lagSeries
	polls      int
}

// lagSeries is the lag samples of one group of replicas.
type lagSeries struct {
	entries    []uint64
	ms         []int64
	partitions map[uint64]bool
}

// add records every non-leader replica of st.
func (l *lagSamples) add(st *client.ClusterStatus) {
	l.polls++
	for _, p := range st.Partitions {
		for _, r := range p.Replicas {
			if r.Role == "leader" || r.Node == p.Leader || r.LagEntries == nil || r.LagMs == nil {
				continue // a leader, or an unreachable replica whose lag is unknown
			}
			for _, s := range []*lagSeries{series(l.byReplicas, len(p.Replicas)), series(l.byNode, r.Node)} {
				s.entries = append(s.entries, *r.LagEntries)
				s.ms = append(s.ms, *r.LagMs)
				s.partitions[p.ID] = true
			}
		}
	}
}

// series returns m[k], creating it.
func series[K comparable](m map[K]*lagSeries, k K) *lagSeries {
	s := m[k]
	if s == nil {
		s = &lagSeries{partitions: map[uint64]bool{}}
		m[k] = s
	}
	return s
}

// lagSummary is the percentiles of one lagSeries, as --json prints them.
type lagSummary struct {
	Group      string  `json:"group"` // "3 replicas" or a node id
	Partitions int     `json:"partitions"`
	Samples    int     `json:"samples"`
	EntriesP50 uint64  `json:"entries_p50"`
	EntriesP99 uint64  `json:"entries_p99"`
	EntriesMax uint64  `json:"entries_max"`
	MsP50      int64   `json:"ms_p50"`
	MsP99      int64   `json:"ms_p99"`
	MsMax      int64   `json:"ms_max"`
	MeanMs     float64 `json:"mean_ms"`
}

// summary returns s's percentiles under the name group.
func (s *lagSeries) summary(group string) lagSummary {
	slices.Sort(s.entries)
	slices.Sort(s.ms)
	var sum int64
	for _, v := range s.ms {
		sum += v
	}
	out := lagSummary{Group: group, Partitions: len(s.partitions), Samples: len(s.ms)}
	if len(s.ms) > 0 {
		out.EntriesP50, out.EntriesP99, out.EntriesMax = rank(s.entries, 50), rank(s.entries, 99), s.entries[len(s.entries)-1]
		out.MsP50, out.MsP99, out.MsMax = rank(s.ms, 50), rank(s.ms, 99), s.ms[len(s.ms)-1]
		out.MeanMs = float64(sum) / float64(len(s.ms))
	}
	return out
}

// rank returns the p-th percentile of sorted (nearest rank).
func rank[T uint64 | int64](sorted []T, p int) T {
	i := (p*len(sorted) + 99) / 100
	return sorted[max(i-1, 0)]
}

// lagReport is what `parley cluster lag` prints.
type lagReport struct {
	Duration   string       `json:"duration"`
	Polls      int          `json:"polls"`
	LoadWrites int64        `json:"load_writes,omitempty"`
	ByReplicas []lagSummary `json:"by_replicas"`
	ByNode     []lagSummary `json:"by_node"`
}

// report summarises the samples.
func (l *lagSamples) report(d time.Duration, writes int64) lagReport {
	rep := lagReport{Duration: d.String(), Polls: l.polls, LoadWrites: writes, ByReplicas: []lagSummary{}, ByNode: []lagSummary{}}
	counts := make([]int, 0, len(l.byReplicas))
	for n := range l.byReplicas {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	for _, n := range counts {
		rep.ByReplicas = append(rep.ByReplicas, l.byReplicas[n].summary(fmt.Sprintf("%d replicas", n)))
	}
	nodes := make([]string, 0, len(l.byNode))
	for n := range l.byNode {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		rep.ByNode = append(rep.ByNode, l.byNode[n].summary(n))
	}
	return rep
}

// writeLag prints a lag report as two tables.
func writeLag(w io.Writer, rep lagReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	load := ""
	if rep.LoadWrites > 0 {
		load = ", " + plural(int(rep.LoadWrites), "load write")
	}
	fmt.Fprintf(w, "follower lag over %s (%s%s): entries and milliseconds behind the leader\n", rep.Duration, plural(rep.Polls, "poll"), load)
	if len(rep.ByNode) == 0 {
		_, err := fmt.Fprintln(w, "no followers: every partition has a single replica")
		return err
	}
	fmt.Fprintln(w)
	for i, part := range [][]lagSummary{rep.ByReplicas, rep.ByNode} {
		head := "REPLICAS"
		if i == 1 {
			head = "NODE"
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s\tPARTITIONS\tSAMPLES\tENTRIES P50\tP99\tMAX\tMS P50\tP99\tMAX\tMEAN MS\t\n", head)
		for _, s := range part {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t\n", strings.TrimSuffix(s.Group, " replicas"),
				s.Partitions, s.Samples, s.EntriesP50, s.EntriesP99, s.EntriesMax, s.MsP50, s.MsP99, s.MsMax, s.MeanMs)
		}
	}
	return tw.Flush()
}

// runClusterLag is `parley cluster lag`.
func runClusterLag(ctx context.Context, e *Env, path string, args []string) error {
	var co clientOptions
	var duration, interval time.Duration
	var load int
	var asJSON bool
	fs := newFlagSet(path, "[flags]", `
Sample every follower's lag behind its leader (entries and milliseconds, from
GET /api/v1/cluster) for --duration, and print the percentiles 50 and 99 and
the maximum, by the number of replicas of the partition and by node: the
freshness of replicas, best measured under load (run 'parley bench kv' at
the same time, or give --load).`)
	addClientFlags(fs, &co)
	fs.DurationVar(&duration, "duration", 10*time.Second, "sample for this `long`")
	fs.DurationVar(&interval, "interval", 100*time.Millisecond, "sample this `often`")
	fs.IntVar(&load, "load", 0, "meanwhile, write KV keys lag-probe/* from this many `clients`")
	fs.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	if _, err := parseClient(fs, &co, e, args, 0, 0); err != nil {
		return err
	}
	if duration <= 0 || interval <= 0 || load < 0 {
		return usagef(path, "--duration and --interval must be positive, --load not negative")
	}
	ctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var writes atomic.Int64
	var wg sync.WaitGroup
	for i := range load {
		wg.Go(func() { writeLoad(ctx, co.newClient(), i, &writes) })
	}
	samples := &lagSamples{byReplicas: map[int]*lagSeries{}, byNode: map[string]*lagSeries{}}
	c := co.newClient()
	var last error
	for ctx.Err() == nil {
		st, err := c.Cluster(ctx)
		switch {
		case err == nil:
			samples.add(st)
		case ctx.Err() == nil:
			last = err
		}
		_ = sleepCtx(ctx, interval)
	}
	wg.Wait()
	if samples.polls == 0 {
		if last == nil {
			last = fmt.Errorf("no sample within %s", duration)
		}
		return last
	}
	rep := samples.report(duration, writes.Load())
	if asJSON {
		return printJSON(e.Stdout, rep)
	}
	return writeLag(e.Stdout, rep)
}

// writeLoad puts 100-byte values under lag-probe/<client>/<n> until ctx
// ends, counting successful writes.
func writeLoad(ctx context.Context, c *client.Client, id int, writes *atomic.Int64) {
	value := []byte(strings.Repeat("x", 100))
	for n := 0; ctx.Err() == nil; n++ {
		if _, err := c.KVPut(ctx, fmt.Sprintf("lag-probe/%d/%d", id, n%1000), value, client.PutOptions{}); err == nil {
			writes.Add(1)
		}
	}
}
