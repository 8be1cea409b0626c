package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/node"
)

// defaultShutdownTimeout bounds the leadership handover on SIGTERM.
const defaultShutdownTimeout = 10 * time.Second

// ServeOptions is everything `parley serve` needs. ParseServe fills it from
// flags and PARLEY_* variables; tests build it directly.
type ServeOptions struct {
	// Config is the node's configuration, TLS excepted: Serve loads the
	// certificate files below into Config.HTTPTLS and Config.ClusterTLS.
	Config config.Config
	// TLSCert and TLSKey, when set, make the node serve HTTPS.
	TLSCert, TLSKey string
	// ClusterTLSCert, ClusterTLSKey and ClusterTLSCA, when set, secure
	// internal traffic with mutual TLS: every peer must present a
	// certificate signed by the CA, and this node presents its own.
	ClusterTLSCert, ClusterTLSKey, ClusterTLSCA string
	// JoinTokenFile, when set, is where the join token is shared: the node
	// that creates the cluster writes its first token there, and a node
	// that joins with an empty data directory waits for it and reads it
	// (serve_token.go).
	JoinTokenFile string
	// Log configures the node's logger.
	Log LogOptions
	// ShutdownTimeout bounds the leadership handover when ctx ends
	// (default 10 s).
	ShutdownTimeout time.Duration
}

// LogOptions configure a command's structured log on standard error.
type LogOptions struct {
	// Level is the least severe level written.
	Level slog.Level
	// Format is "text" (the default when empty) or "json".
	Format string
}

// logger returns a slog.Logger writing to w as o says.
func (o LogOptions) logger(w io.Writer) *slog.Logger {
	ho := &slog.HandlerOptions{Level: o.Level}
	if o.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// addLogFlags defines --log-level (default level) and --log-format into o.
func addLogFlags(fs *flagSet, o *LogOptions, level slog.Level) {
	o.Level = level
	fs.Var(levelValue{&o.Level}, "log-level", "least severe log `level` written to stderr: debug, info, warn or error")
	fs.Var(newChoiceValue(&o.Format, "text", "text", "json"), "log-format", "log `format`: text or json")
}

// runServe is the action of `parley serve`.
func runServe(ctx context.Context, e *Env, path string, args []string) error {
	o, err := ParseServe(path, args, e.getenv)
	if err != nil {
		return err
	}
	return Serve(ctx, o, e.Stdout, e.Stderr)
}

// ParseServe reads the flags of `parley serve` (the command's name is path,
// for messages), falling back to PARLEY_* variables looked up with getenv,
// then to config.Default. Problems are usage errors naming the flag.
func ParseServe(path string, args []string, getenv func(string) string) (ServeOptions, error) {
	o := ServeOptions{ShutdownTimeout: defaultShutdownTimeout}
	fs := newFlagSet(path, "[flags]", `
Run one Parley node. With an empty data directory and no --join it creates a
new cluster; with --join and --join-token it joins the cluster of those
members; with data it resumes. SIGINT or SIGTERM hands leadership over and
exits.

Internal traffic is mutual TLS with the cluster's own CA and gossip is
encrypted, with no flags: the node that creates a cluster prints its join
token and writes it to DATA-DIR/join-token (readable by its owner only).
--cluster-tls-* use your own PKI instead; --insecure turns security off.

Every flag may also be set with the environment variable shown beside it:
PARLEY_ and the flag's name in capitals with '_' for '-' (--data-dir is
$PARLEY_DATA_DIR, --join-token $PARLEY_JOIN_TOKEN).
`+configFileHelp)
	defineNodeFlags(fs, &o)
	addLogFlags(fs, &o.Log, slog.LevelInfo)
	fs.withConfigFile()
	fs.bindAllEnv("PARLEY_")
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

// defineNodeFlags defines one flag for every node setting, writing into o.
func defineNodeFlags(fs *flagSet, o *ServeOptions) {
	d := config.Default()
	c := &o.Config
	*c = d
	fs.StringVar(&c.ID, "id", d.ID, "node `id`, unique in the cluster (letters, digits, '_', '.', '-')")
	fs.StringVar(&c.DataDir, "data-dir", d.DataDir, "`directory` holding the node's data")
	fs.StringVar(&c.HTTPAddr, "http", d.HTTPAddr, "`host:port` the web app and HTTP API listen on")
	fs.StringVar(&c.ClusterAddr, "cluster", d.ClusterAddr, "`host:port` internal traffic listens on")
	fs.StringVar(&c.Advertise, "advertise", "", "internal `host:port` other nodes dial (default: the --cluster address)")
	fs.StringVar(&c.AdvertiseHTTP, "advertise-http", "", "HTTP `host:port` told to other nodes and clients (default: the --http address)")
	fs.StringVar(&c.PublicURL, "public-url", "", "base `URL` of short links (default: http:// and the advertised HTTP address)")
	fs.StringVar(&c.LinksURL, "links-url", "", "base `URL` of a short domain that reaches the --links listeners (https://s.example): short links are then URL/CODE, served at the root, and no link may point at that host (default: short links are the public URL's /s/CODE)")
	fs.StringVar(&c.LinksAddr, "links", "", "`host:port` where short links (GET /s/CODE, and /CODE at the root) are also served, alone, by a leaner HTTP/1.1 server than the API's: about half the CPU per redirect (HTTPS with --tls-cert; default: not served apart)")
	fs.Var(newListValue(&c.Join, nil), "join", "internal `addresses` (host:port, host names are resolved at each attempt) of existing members to join, comma separated, repeatable; tried in turn until one answers; a node given --join never creates a cluster (but the --initial-node)")
	fs.StringVar(&c.JoinToken, "join-token", "", "join `token` of the cluster to join (printed by its first node, kept in that node's data directory as join-token; or parley cluster token create)")
	fs.StringVar(&o.JoinTokenFile, "join-token-file", "", "`file` where the join token is shared: the node that creates the cluster writes its first token there; a joining node with an empty data directory waits until it exists and reads it (a volume shared by the nodes, a mounted secret)")
	fs.StringVar(&c.InitialNode, "initial-node", "", "`id` of the node that creates the cluster when its data directory is empty, --join ignored; every other node joins (so that every node can run the same flags)")
	fs.BoolVar(&c.Insecure, "insecure", false, "run the cluster port and gossip without authentication or encryption: anyone who reaches them owns the cluster (a warning is logged on every start)")
	fs.StringVar(&c.Zone, "zone", "", "availability `zone` of this node, used to spread replicas")
	fs.BoolVar(&c.Standby, "standby", false, "hold no replicas until one is needed")
	fs.BoolVar(&c.RebuildQuarantined, "rebuild-quarantined", false, "when the data directory may not be used again — quarantined (its store failed a checksum) or found stale (it went back in time) — set its contents aside in a quarantined-TIME or stale-TIME subdirectory and join again through --join under the same --id, copying this node's replicas from its peers, instead of refusing to start (needs --join and a join token)")
	fs.StringVar(&c.SearchDir, "search-dir", "", "`directory` of the chat search indexes, a cache emptied at every start (default: search in --data-dir; a memory file system such as /dev/shm keeps their writes off the Raft log's disk)")
	fs.IntVar(&c.SearchReplicas, "search-replicas", d.SearchReplicas, "`count` of the replicas of each partition that keep a chat search index (each costs CPU and disk writes on every post; with 1, a search of a partition whose indexing node died waits for the next replica to rebuild its index)")
	fs.BoolVar(&c.NoSearchIndex, "no-search-index", false, "keep no chat search index on this node: its searches ask the nodes that keep one")
	fs.IntVar(&c.Partitions, "partitions", d.Partitions, "number of partitions `P` (used only when creating the cluster)")
	fs.IntVar(&c.ReplicationFactor, "replication-factor", d.ReplicationFactor, "replicas per partition `RF` (used only when creating the cluster)")
	fs.DurationVar(&c.DeadAfter, "dead-after", d.DeadAfter, "how long a node may be unreachable before its replicas are rebuilt elsewhere")
	fs.DurationVar(&c.RoundPause, "round-pause", d.RoundPause, "how long the Raft loop waits after each committed round while at least 4 of this node's writes wait, so that the next round carries more of them (less CPU per write under load; a lone writer never waits); 0: off")
	fs.DurationVar(&c.DiskSlowSync, "disk-slow-sync", d.DiskSlowSync, "synced-commit time above which the node calls its disk slow and hands its leaderships over (median of the last 5 s; 0: off)")
	fs.DurationVar(&c.DedupWindow, "dedup-window", d.DedupWindow, "how long idempotency keys are remembered")
	fs.DurationVar(&c.HistoryRetention, "history-retention", d.HistoryRetention, "how long room history is kept in rooms without a retention of their own (0: forever)")
	fs.Var(newEditWindowValue(&c.EditWindow, d.EditWindow), "edit-window", "how long after posting authors may edit a message (`duration`; none: no limit; 0: editing is off)")
	fs.Int64Var(&c.MaxFileSize, "max-file-size", d.MaxFileSize, "largest file an upload may carry, in `bytes`")
	fs.Int64Var(&c.RoomFileQuota, "room-file-quota", d.RoomFileQuota, "most `bytes` of files one room stores, unfinished uploads included")
	fs.IntVar(&c.KVHistory, "kv-history", d.KVHistory, "`versions` of each kv key kept for reads at a revision and watches (1 to 1000)")
	fs.Var(newChoiceValue(&c.Registration, d.Registration, "open", "closed"), "registration", "`mode` of registration: open (anyone may sign up) or closed (only admins create users)")
	fs.StringVar(&c.PprofAddr, "pprof", "", "`host:port` on loopback serving Go's CPU, heap, mutex and block profiles at /debug/pprof/, without authentication (\":6060\" binds to 127.0.0.1; another host is refused; default: off)")
	fs.IntVar(&c.CacheSize, "cache-size", d.CacheSize, "`entries` in the node's read cache")
	fs.Var(newChoiceValue(&c.CachePolicy, d.CachePolicy, "lru", "lfu", "fifo"), "cache-policy", "read cache eviction `policy`: lru, lfu or fifo")
	defineLimitFlags(fs, c, d)
	fs.Var(newListValue(&c.AllowedOrigins, nil), "allowed-origin", "extra `origins` whose browser pages may open streams and call the API (CORS), also named in the web app's Content-Security-Policy, comma separated, repeatable")
	fs.Var(newListValue(&c.WebhookAllowCIDRs, nil), "webhook-allow-cidr", "address `ranges` (CIDRs or addresses) outgoing webhooks may reach although private, loopback or link-local, comma separated, repeatable (default: none: such hooks are refused)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "certificate `file` (PEM) for HTTPS; needs --tls-key")
	fs.StringVar(&o.TLSKey, "tls-key", "", "private key `file` (PEM) for HTTPS; needs --tls-cert")
	fs.StringVar(&o.ClusterTLSCert, "cluster-tls-cert", "", "certificate `file` (PEM) this node presents on internal traffic (mutual TLS)")
	fs.StringVar(&o.ClusterTLSKey, "cluster-tls-key", "", "private key `file` (PEM) of --cluster-tls-cert")
	fs.StringVar(&o.ClusterTLSCA, "cluster-tls-ca", "", "CA certificate `file` (PEM) that signs every node's internal certificate")
	fs.DurationVar(&c.TickInterval, "tick", d.TickInterval, "Raft tick (tests)")
	fs.IntVar(&c.ElectionTicks, "election-ticks", d.ElectionTicks, "Raft election timeout in ticks (tests)")
	fs.Uint64Var(&c.CompactionThreshold, "compaction-threshold", d.CompactionThreshold, "applied `entries` a partition's leader keeps in its Raft log for a replica that lags (a replica further behind gets a snapshot); with every replica caught up, each keeps a tenth of this")
}

// defineLimitFlags defines the flags of the per-user and per-address limits
// (docs/LIMITS.md), each counted across the cluster. A rate is N/PERIOD:
// bursts of up to N, refilled at N every PERIOD.
func defineLimitFlags(fs *flagSet, c *config.Config, d config.Config) {
	fs.IntVar(&c.ConnsPerAddress, "limit-conns-per-address", d.ConnsPerAddress, "client connections (API and --links together) one client address may hold open on this node at once; one more is closed at accept: a `count` (-1 or 0: no limit)")
	fs.IntVar(&c.MaxConns, "limit-conns", d.MaxConns, "client connections this node holds open in all, so that clients cannot take the file descriptors its store and peers need: a `count` (0: three quarters of the open-file limit; -1: no limit)")
	fs.IntVar(&c.RateLimit, "rate-limit", d.RateLimit, "login and registration `attempts` per minute per client address, across the cluster (0: no limit)")
	l := &c.Limits
	fs.Var(&l.LoginsPerUser, "limit-logins-per-user", "login attempts per account from any address: `N/PERIOD` (bursts of N, N more every PERIOD) or off")
	fs.Var(&l.Posts, "limit-posts", "room messages per user: `N/PERIOD` or off")
	fs.Var(&l.QueueSends, "limit-queue-sends", "queue messages sent per user: `N/PERIOD` or off")
	fs.Var(&l.RoomCreates, "limit-room-creates", "rooms created per user: `N/PERIOD` or off")
	fs.Var(&l.QueueCreates, "limit-queue-creates", "queues created per user: `N/PERIOD` or off")
	fs.Var(&l.LinkCreates, "limit-link-creates", "short links created per user: `N/PERIOD` or off")
	fs.Var(&l.Searches, "limit-searches", "chat searches per user: `N/PERIOD` or off")
	fs.IntVar(&l.Streams, "limit-streams", d.Limits.Streams, "WebSocket streams one user may hold open at once: a `count` (0: no limit)")
	fs.IntVar(&l.LongPolls, "limit-long-polls", d.Limits.LongPolls, "queue receives with a wait (long polls) one user may have pending at once: a `count` (0: no limit)")
}

// check reports settings that cannot work, naming the flags.
func (o *ServeOptions) check() error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return fmt.Errorf("--tls-cert and --tls-key must be given together")
	}
	n := 0
	for _, f := range []string{o.ClusterTLSCert, o.ClusterTLSKey, o.ClusterTLSCA} {
		if f != "" {
			n++
		}
	}
	if n != 0 && n != 3 {
		return fmt.Errorf("mutual TLS needs all of --cluster-tls-cert, --cluster-tls-key and --cluster-tls-ca")
	}
	if o.JoinTokenFile != "" && o.Config.JoinToken != "" {
		return fmt.Errorf("--join-token and --join-token-file: give one")
	}
	if err := o.Config.Validate(); err != nil {
		return err
	}
	return nil
}

// Serve runs one node until ctx ends, then hands its leadership over
// (bounded by ShutdownTimeout) and stops. It prints one line with the
// node's addresses to stdout once the node serves, and logs to stderr.
// An error means the node could not start.
func Serve(ctx context.Context, o ServeOptions, stdout, stderr io.Writer) error {
	cfg := o.Config
	if err := o.check(); err != nil {
		return err
	}
	if err := o.loadTLS(&cfg); err != nil {
		return err
	}
	log := o.Log.logger(stderr)
	if err := o.readJoinTokenFile(ctx, &cfg, log); err != nil {
		return err
	}
	n, err := node.New(cfg, log)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		return fmt.Errorf("node %s did not start: %w", cfg.ID, err)
	}
	if err := o.shareJoinToken(n.JoinToken()); err != nil {
		log.Warn("could not share the join token", "err", err)
	}
	fmt.Fprintf(stdout, "parley node %s serving %s (cluster %s, data %s)\n",
		cfg.ID, httpURL(n.HTTPAddr(), cfg.HTTPTLS != nil), n.ClusterAddr(), cfg.DataDir)
	if a := n.LinksAddr(); a != "" {
		fmt.Fprintf(stdout, "short links also served at %s/CODE (and /s/CODE)\n", httpURL(a, cfg.HTTPTLS != nil))
	}
	if cfg.LinksURL != "" {
		fmt.Fprintf(stdout, "short links are %s/CODE\n", strings.TrimSuffix(cfg.LinksURL, "/"))
	}
	if n.CreatedCluster() {
		if tok := n.JoinToken(); tok != "" {
			joinAddr := n.ClusterAddr()
			if cfg.Advertise != "" { // the listener may be 0.0.0.0 (a container)
				joinAddr = cfg.Advertise
			}
			fmt.Fprintf(stdout, "created a new cluster; other nodes join it with:\n  --join %s --join-token %s\n(the token is also in %s; keep it secret)\n",
				joinAddr, tok, filepath.Join(cfg.DataDir, node.JoinTokenFile))
		}
	}
	var fatal error
	select {
	case <-ctx.Done():
	case fatal = <-n.Fatal(): // the node cannot go on safely (a stale data dir, a failed store)
		log.Error("stopping", "err", fatal)
	}
	timeout := o.ShutdownTimeout
	if timeout <= 0 {
		timeout = defaultShutdownTimeout
	}
	log.Info("shutting down: handing leadership over", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	n.Shutdown(sctx)
	log.Info("stopped")
	return fatal
}

// loadTLS reads the certificate files named in o into cfg.
func (o *ServeOptions) loadTLS(cfg *config.Config) error {
	if o.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return fmt.Errorf("load --tls-cert/--tls-key: %w", err)
		}
		cfg.HTTPTLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if o.ClusterTLSCert != "" {
		tc, err := mutualTLS(o.ClusterTLSCert, o.ClusterTLSKey, o.ClusterTLSCA)
		if err != nil {
			return err
		}
		cfg.ClusterTLS = tc
	}
	return nil
}

// mutualTLS builds the internal traffic TLS configuration: this node's
// certificate, and the CA that must have signed every peer's, both as a
// server (client certificates required and verified) and as a client.
func mutualTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load --cluster-tls-cert/--cluster-tls-key: %w", err)
	}
	pool, err := loadCAFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("load --cluster-tls-ca: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// httpURL turns a listener address into a URL a user can open: an
// unspecified host (":7070", "0.0.0.0", "::") becomes localhost.
func httpURL(addr string, https bool) string {
	scheme := "http"
	if https {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
