package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/node"
)

// DevOptions configure `parley dev`: a local cluster of Nodes nodes in one
// process. Node i (from 0) serves HTTP on BasePort+2i and internal traffic
// on BasePort+2i+1, keeps its data in DataDir/n<i+1>; node 1 creates the
// cluster and the others join it.
type DevOptions struct {
	// Nodes is how many nodes to run (1 to 99).
	Nodes int
	// Host is the interface every node listens on.
	Host string
	// BasePort is node 1's HTTP port.
	BasePort int
	// DataDir holds one directory per node; existing data is resumed.
	DataDir string
	// Partitions and ReplicationFactor shape a new cluster.
	Partitions, ReplicationFactor int
	// TickInterval and ElectionTicks tune Raft (tests shorten them).
	TickInterval  time.Duration
	ElectionTicks int
	// NoSync skips fsync (tests only: breaks the durability guarantee).
	NoSync bool
	// Log configures the nodes' shared logger.
	Log LogOptions
}

// runDev is the action of `parley dev`.
func runDev(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseDev(path, args, e.getenv)
	if err != nil {
		return err
	}
	return Dev(ctx, o, e.Stdout, e.Stderr)
}

// ParseDev reads the flags of `parley dev`, falling back to PARLEY_DEV_*
// variables.
func ParseDev(path string, args []string, getenv func(string) string) (DevOptions, error) {
	d := config.Default()
	var o DevOptions
	fs := newFlagSet(path, "[flags]", `
Run a local cluster of N nodes in this process, for trying Parley and for
tests: node i serves HTTP on base-port+2(i-1) and internal traffic on the
port after it. Node 1 creates the cluster, the others join it; a restart
with the same data directory resumes. Ctrl-C stops every node.`)
	fs.IntVar(&o.Nodes, "nodes", 3, "number of `nodes`")
	fs.StringVar(&o.Host, "host", "127.0.0.1", "`interface` every node listens on")
	fs.IntVar(&o.BasePort, "base-port", 7070, "HTTP `port` of node 1; node i uses base-port+2(i-1) and the next port")
	fs.StringVar(&o.DataDir, "data-dir", "parley-dev", "`directory` holding one data directory per node")
	fs.IntVar(&o.Partitions, "partitions", d.Partitions, "number of partitions `P` (used only when creating the cluster)")
	fs.IntVar(&o.ReplicationFactor, "replication-factor", d.ReplicationFactor, "replicas per partition `RF` (used only when creating the cluster)")
	fs.DurationVar(&o.TickInterval, "tick", d.TickInterval, "Raft tick (tests)")
	fs.IntVar(&o.ElectionTicks, "election-ticks", d.ElectionTicks, "Raft election timeout in ticks (tests)")
	addLogFlags(fs, &o.Log, slog.LevelWarn) // quiet but for problems
	fs.bindAllEnv("PARLEY_DEV_")
	fs.hide("tick")
	fs.hide("election-ticks")
	pos, err := fs.parse(args, getenv)
	if err != nil {
		return o, err
	}
	if len(pos) > 0 {
		return o, usagef(path, "unexpected argument %q", pos[0])
	}
	if err := o.check(); err != nil {
		return o, &usageError{path: path, err: err}
	}
	return o, nil
}

// check reports settings that cannot work, naming the flags.
func (o *DevOptions) check() error {
	if o.Nodes < 1 || o.Nodes > 99 {
		return fmt.Errorf("--nodes %d: want 1 to 99", o.Nodes)
	}
	if o.BasePort < 1 || o.BasePort+2*o.Nodes-1 > 65535 {
		return fmt.Errorf("--base-port %d: the nodes need ports %d to %d", o.BasePort, o.BasePort, o.BasePort+2*o.Nodes-1)
	}
	for i := range o.Nodes {
		cfg := o.nodeConfig(i)
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// nodeConfig returns the configuration of node i (from 0).
func (o *DevOptions) nodeConfig(i int) config.Config {
	cfg := config.Default()
	cfg.ID = "n" + strconv.Itoa(i+1)
	cfg.DataDir = filepath.Join(o.DataDir, cfg.ID)
	cfg.HTTPAddr = net.JoinHostPort(o.Host, strconv.Itoa(o.BasePort+2*i))
	cfg.ClusterAddr = net.JoinHostPort(o.Host, strconv.Itoa(o.BasePort+2*i+1))
	cfg.GossipAddr = net.JoinHostPort(o.Host, "0") // the next port is node i+1's HTTP port
	cfg.Partitions, cfg.ReplicationFactor = o.Partitions, o.ReplicationFactor
	if o.TickInterval > 0 {
		cfg.TickInterval = o.TickInterval
	}
	if o.ElectionTicks > 0 {
		cfg.ElectionTicks = o.ElectionTicks
	}
	cfg.NoSync = o.NoSync
	if i > 0 {
		cfg.Join = []string{net.JoinHostPort(o.Host, strconv.Itoa(o.BasePort+1))}
	}
	return cfg
}

// Dev starts the nodes one after the other, prints a table of their
// addresses to stdout, and runs them until ctx ends; then it stops them
// all. An error means a node could not start (the others are stopped).
func Dev(ctx context.Context, o DevOptions, stdout, stderr io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	log := o.Log.logger(stderr)
	nodes := make([]*node.Node, 0, o.Nodes)
	defer func() { closeAll(nodes) }()
	for i := range o.Nodes {
		cfg := o.nodeConfig(i)
		if i > 0 {
			cfg.JoinToken = nodes[0].JoinToken() // a restarted dev cluster needs none
		}
		n, err := node.New(cfg, log)
		if err != nil {
			return err
		}
		if err := n.Start(ctx); err != nil {
			return fmt.Errorf("node %s did not start: %w", cfg.ID, err)
		}
		nodes = append(nodes, n)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHTTP\tCLUSTER\tDATA")
	for i, n := range nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.ID(), httpURL(n.HTTPAddr(), false), n.ClusterAddr(), o.nodeConfig(i).DataDir)
	}
	_ = tw.Flush()
	fmt.Fprintf(stdout, "%d-node cluster running; Ctrl-C stops it\n", len(nodes))
	<-ctx.Done()
	log.Info("stopping the dev cluster")
	return nil
}

// closeAll stops nodes in parallel. The whole cluster goes down, so no
// leadership is handed over.
func closeAll(nodes []*node.Node) {
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(n.Close)
	}
	wg.Wait()
}
