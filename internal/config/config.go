// Package config holds the configuration of one Parley node, its defaults
// and its validation. Flags and environment variables that fill it live in
// the cli package.
package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"regexp"
	"time"

	"github.com/parley-chat/parley/internal/ratelimit"
)

// Config configures one node. The zero value is not valid; start from
// Default.
type Config struct {
	// ID names the node in the cluster (letters, digits, '_', '.', '-').
	ID string
	// DataDir holds the node's Pebble store.
	DataDir string
	// HTTPAddr is where the web app and API listen.
	HTTPAddr string
	// ClusterAddr is where internal traffic listens.
	ClusterAddr string
	// Advertise is the internal address other nodes use to reach this one;
	// empty means ClusterAddr (with "localhost" kept as is).
	Advertise string
	// AdvertiseHTTP is the HTTP address other nodes and clients are told;
	// empty means HTTPAddr.
	AdvertiseHTTP string
	// PublicURL is the base of short links; empty means http://AdvertiseHTTP.
	PublicURL string
	// LinksAddr, when set, is where short links are also served, alone and
	// on a leaner HTTP/1.1 server than the API's (api.Server.LinksHandler);
	// HTTPS when HTTPTLS is set.
	LinksAddr string
	// LinksURL, when set, is the base URL of a short domain that reaches
	// the links listeners ("https://s.example"): a link's short_url is
	// LinksURL + "/" + code, which they serve at the root, and no long
	// URL may point anywhere on that host (it would loop). Empty: short
	// URLs are PublicURL + "/s/" + code.
	LinksURL string
	// Join lists internal addresses (host names or IPs, with ports) of
	// existing members. A node given Join never creates a cluster, unless
	// it is the InitialNode.
	Join []string
	// InitialNode, when set, names the node that creates the cluster when
	// its data directory is empty; every other node joins through Join.
	// It lets every node run the same settings (a Kubernetes StatefulSet).
	InitialNode string
	// Zone is the node's availability zone, used to spread replicas.
	Zone string
	// Standby nodes hold no replicas until one is needed.
	Standby bool
	// RebuildQuarantined makes a start on a data directory that may not
	// be used again — quarantined (a checksum failed) or found stale (it
	// went back in time) — set its contents aside (in a quarantined-TIME
	// or stale-TIME subdirectory) and join again through Join under the
	// same ID, copying the node's replicas from its peers, instead of
	// refusing to start.
	RebuildQuarantined bool
	// Partitions is P, used only when this node creates the cluster.
	Partitions int
	// ReplicationFactor is RF, used only when this node creates the cluster.
	ReplicationFactor int
	// DeadAfter is how long a node may be unreachable before its replicas are
	// rebuilt elsewhere.
	DeadAfter time.Duration
	// DiskSlowSync is the synced-commit time above which the node calls its
	// disk slow and hands its leaderships over (when the median synced
	// commit of the last 5 s took longer); 0 turns the check off.
	DiskSlowSync time.Duration
	// RoundPause is how long the Raft loop waits after a committed round
	// before the next one while at least 4 of this node's proposals wait,
	// so that rounds carry more entries under load (multiraft's pace.go);
	// 0 turns it off.
	RoundPause time.Duration
	// DedupWindow is how long idempotency keys are remembered.
	DedupWindow time.Duration
	// HistoryRetention is how long room history is kept (0 = forever),
	// in rooms that set no retention of their own.
	HistoryRetention time.Duration
	// HistoryCompactInterval is how often the partitions a node leads
	// drop expired room history (no flag; tests shorten it). Zero means
	// the default, one minute.
	HistoryCompactInterval time.Duration
	// EditWindow is how long after posting a message its author may edit
	// it: NoEditLimit (the default) for ever, 0 never.
	EditWindow time.Duration
	// MaxFileSize is the largest file an upload may carry, in bytes;
	// RoomFileQuota the most bytes of files one room stores, uploads in
	// progress included (chat.DefaultMaxFileSize and
	// chat.DefaultRoomFileQuota).
	MaxFileSize, RoomFileQuota int64
	// KVHistory is how many versions of each kv key are kept (1 to
	// kv.MaxHistory; the leader stamps it into every write).
	KVHistory int
	// Registration is "open" or "closed".
	Registration string
	// CacheSize is the number of entries in the node's read cache.
	CacheSize int
	// CachePolicy is lru, lfu or fifo.
	CachePolicy string
	// RateLimit is login and registration attempts per minute per client
	// address, counted across the cluster (0: no limit).
	RateLimit int
	// Limits are the per-user limits, counted across the cluster.
	Limits Limits
	// ConnsPerAddress is how many client connections (the API and links
	// listeners together) one client address may hold open on this node
	// at once; one more is closed at accept (0: no limit).
	ConnsPerAddress int
	// MaxConns caps this node's client connections in all, so that clients
	// cannot take the file descriptors its store and cluster port need; 0
	// (the default) takes three quarters of the open-file limit, and -1
	// sets no cap.
	MaxConns int
	// PprofAddr, when set, serves Go's profiles (/debug/pprof/) there,
	// without authentication, so only a loopback address is accepted; a
	// host:port with an empty host binds to 127.0.0.1. Empty (the
	// default): no profiles.
	PprofAddr string
	// AllowedOrigins are extra Origins accepted for WebSocket streams.
	AllowedOrigins []string
	// WebhookAllowCIDRs are address ranges (CIDRs or single addresses)
	// outgoing webhooks may reach although they are private, loopback,
	// link-local or otherwise refused (internal/webhook).
	WebhookAllowCIDRs []string
	// HTTPTLS, when set, serves HTTPS.
	HTTPTLS *tls.Config
	// ClusterTLS, when set, secures internal traffic with mutual TLS on the
	// operator's own PKI. When nil and Insecure is false (the default), the
	// cluster makes its own CA and every node gets a certificate from it.
	ClusterTLS *tls.Config
	// JoinToken lets a node with Join and an empty data directory join:
	// the token printed by the node that created the cluster (kept in its
	// data directory's join-token file) or made by `parley cluster token
	// create`.
	JoinToken string
	// Insecure turns off the cluster's own mutual TLS: anyone who reaches
	// the cluster and gossip ports can read and write everything. Only for
	// a network that nothing else can reach.
	Insecure bool

	// GossipAddr is where membership gossip listens and is reached (TCP and
	// UDP); empty means the cluster address's port plus one. Not a flag:
	// tests, whose cluster port is picked at random, set a free one.
	GossipAddr string

	// TickInterval is the Raft tick; tests shorten it.
	TickInterval time.Duration
	// ElectionTicks is the election timeout in ticks.
	ElectionTicks int
	// CompactionThreshold is the most applied entries a partition's leader
	// keeps in its Raft log for a replica that lags (a replica further
	// behind gets a snapshot; tests lower it to force snapshots). With every
	// replica caught up, each keeps a tenth of it (multiraft/DESIGN.md).
	CompactionThreshold uint64
	// NoSync disables fsync (tests only: breaks the durability guarantee).
	NoSync bool
	// NoSearchIndex turns chat search indexing off on this node: it keeps
	// no search index of its replicas, and searches ask other replicas
	// (internal/search; benchmarks measure posts with and without it).
	NoSearchIndex bool
	// SearchReplicas is how many replicas of each partition keep a search
	// index: the first ones of the partition's replica list whose nodes
	// are alive and keep indexes (internal/node, search_holders.go). Each
	// costs CPU and disk writes on every post; a search of the partition
	// needs one ready, and when the last one's node dies the next replica
	// builds its index from its state (docs/OPERATIONS.md, "Search").
	SearchReplicas int
	// SearchDir is where the search indexes keep their files, a cache
	// emptied at every start; "" is <DataDir>/search. A memory file system
	// (/dev/shm) keeps the indexes' writes and fsyncs off the disk of the
	// Raft logs (docs/BENCHMARKS.md measures both).
	SearchDir string
	// PresenceTTL is how long a presence lease lasts without renewal (no
	// flag; tests shorten it): a dead node's users show offline within
	// PresenceTTL plus a second. Zero means the default, 11 s.
	PresenceTTL time.Duration
	// SessionTTL is how long a session opened through this node lasts
	// after login (no flag; tests shorten it to watch sessions expire).
	// Zero means the account service's default, 7 days.
	SessionTTL time.Duration
}

// Limits are the per-user limits of docs/LIMITS.md. Each is counted across
// the whole cluster by the owner of the user's key; a zero Rate or count
// turns that limit off.
type Limits struct {
	// Posts is room messages per user.
	Posts ratelimit.Rate
	// QueueSends is queue messages sent per user.
	QueueSends ratelimit.Rate
	// RoomCreates, QueueCreates and LinkCreates are rooms, queues and short
	// links created per user.
	RoomCreates, QueueCreates, LinkCreates ratelimit.Rate
	// Searches is chat searches per user (each fans out to every
	// partition).
	Searches ratelimit.Rate
	// LoginsPerUser is sign-in attempts per account, from any address.
	LoginsPerUser ratelimit.Rate
	// Streams is how many WebSocket streams one user may hold open at once.
	Streams int
	// LongPolls is how many queue receives (with a wait) one user may have
	// waiting at once.
	LongPolls int
}

// DefaultLimits are the limits `parley serve` runs with: far above what a
// person or a well-behaved integration does, far below a flood.
func DefaultLimits() Limits {
	return Limits{
		Posts:         ratelimit.Rate{N: 60, Per: 10 * time.Second},
		QueueSends:    ratelimit.Rate{N: 1000, Per: 10 * time.Second},
		RoomCreates:   ratelimit.Rate{N: 30, Per: time.Hour},
		QueueCreates:  ratelimit.Rate{N: 60, Per: time.Hour},
		LinkCreates:   ratelimit.Rate{N: 300, Per: time.Hour},
		Searches:      ratelimit.Rate{N: 30, Per: 10 * time.Second},
		LoginsPerUser: ratelimit.Rate{N: 10, Per: time.Minute},
		Streams:       20,
		LongPolls:     50,
	}
}

// Validate reports the first limit that cannot work, naming its flag.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		r    ratelimit.Rate
	}{
		{"limit-posts", l.Posts}, {"limit-queue-sends", l.QueueSends}, {"limit-room-creates", l.RoomCreates},
		{"limit-queue-creates", l.QueueCreates}, {"limit-link-creates", l.LinkCreates}, {"limit-logins-per-user", l.LoginsPerUser},
		{"limit-searches", l.Searches},
	} {
		if f.r.N < 0 || (f.r.N > 0 && f.r.Per <= 0) {
			return fmt.Errorf("%s: want N/PERIOD with N and PERIOD positive, or off", f.name)
		}
	}
	if l.Streams < 0 || l.LongPolls < 0 {
		return errors.New("limit-streams and limit-long-polls: must not be negative (0: no limit)")
	}
	return nil
}

// Default returns the configuration `parley serve` runs with when given no
// flags.
func Default() Config {
	return Config{
		ID:                  "n1",
		DataDir:             "parley-data",
		HTTPAddr:            "localhost:7070",
		ClusterAddr:         "localhost:7071",
		Partitions:          16,
		KVHistory:           10,
		ReplicationFactor:   3,
		SearchReplicas:      1,
		DeadAfter:           30 * time.Second,
		DiskSlowSync:        500 * time.Millisecond,
		RoundPause:          150 * time.Microsecond,
		DedupWindow:         2 * time.Minute,
		Registration:        "open",
		CacheSize:           10000,
		CachePolicy:         "lru",
		RateLimit:           30,
		Limits:              DefaultLimits(),
		ConnsPerAddress:     1024,
		TickInterval:        100 * time.Millisecond,
		ElectionTicks:       10,
		CompactionThreshold: 10000,
		PresenceTTL:         11 * time.Second,
		EditWindow:          NoEditLimit,
		MaxFileSize:         10 << 20,
		RoomFileQuota:       1 << 30,
	}
}

// NoEditLimit is the EditWindow that lets authors edit their messages at
// any time.
const NoEditLimit time.Duration = -1

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Validate reports the first problem with c, naming the setting.
func (c *Config) Validate() error {
	var errs []error
	if !nameRE.MatchString(c.ID) {
		errs = append(errs, fmt.Errorf("id %q: use 1-64 of letters, digits, '_', '.', '-'", c.ID))
	}
	if c.InitialNode != "" && !nameRE.MatchString(c.InitialNode) {
		errs = append(errs, fmt.Errorf("initial-node %q: use 1-64 of letters, digits, '_', '.', '-'", c.InitialNode))
	}
	if c.InitialNode != "" && c.InitialNode != c.ID && len(c.Join) == 0 {
		errs = append(errs, fmt.Errorf("initial-node %q: node %q does not create the cluster, so it needs --join", c.InitialNode, c.ID))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir: must not be empty"))
	}
	if c.RebuildQuarantined && len(c.Join) == 0 {
		errs = append(errs, errors.New("rebuild-quarantined: a node rebuilds by joining again, so it needs --join"))
	}
	for name, addr := range map[string]string{"http": c.HTTPAddr, "cluster": c.ClusterAddr} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want host:port", name, addr))
		}
	}
	if c.LinksAddr != "" {
		if _, _, err := net.SplitHostPort(c.LinksAddr); err != nil {
			errs = append(errs, fmt.Errorf("links %q: want host:port", c.LinksAddr))
		}
	}
	if err := checkBaseURL(c.PublicURL, true); err != nil {
		errs = append(errs, fmt.Errorf("public-url %q: %w", c.PublicURL, err))
	}
	if err := checkBaseURL(c.LinksURL, false); err != nil {
		errs = append(errs, fmt.Errorf("links-url %q: %w", c.LinksURL, err))
	}
	if c.PprofAddr != "" {
		if host, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			errs = append(errs, fmt.Errorf("pprof %q: want host:port (or :port for loopback)", c.PprofAddr))
		} else if ip := net.ParseIP(host); host != "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			errs = append(errs, fmt.Errorf("pprof %q: profiles are served without authentication, so only on loopback (127.0.0.1:PORT, or :PORT); reach them through an SSH tunnel", c.PprofAddr))
		}
	}
	if c.Partitions < 1 || c.Partitions > 4096 {
		errs = append(errs, fmt.Errorf("partitions %d: want 1 to 4096", c.Partitions))
	}
	if c.KVHistory < 1 || c.KVHistory > 1000 {
		errs = append(errs, fmt.Errorf("kv-history %d: want 1 to 1000", c.KVHistory))
	}
	if c.ReplicationFactor < 1 || c.ReplicationFactor > 7 {
		errs = append(errs, fmt.Errorf("replication-factor %d: want 1 to 7", c.ReplicationFactor))
	}
	if c.SearchReplicas < 1 || c.SearchReplicas > 7 {
		errs = append(errs, fmt.Errorf("search-replicas %d: want 1 to 7", c.SearchReplicas))
	}
	if c.DedupWindow <= 0 {
		errs = append(errs, errors.New("dedup-window: must be positive"))
	}
	if c.MaxFileSize <= 0 || c.RoomFileQuota < c.MaxFileSize {
		errs = append(errs, fmt.Errorf("max-file-size %d, room-file-quota %d: want a positive file size no larger than the quota", c.MaxFileSize, c.RoomFileQuota))
	}
	if c.DeadAfter <= 0 {
		errs = append(errs, errors.New("dead-after: must be positive"))
	}
	if c.DiskSlowSync < 0 {
		errs = append(errs, errors.New("disk-slow-sync: must not be negative (0 turns the check off)"))
	}
	if c.ConnsPerAddress < -1 {
		errs = append(errs, fmt.Errorf("limit-conns-per-address %d: want a count, or -1 (or 0) for no limit", c.ConnsPerAddress))
	}
	if c.MaxConns < -1 {
		errs = append(errs, fmt.Errorf("limit-conns %d: want a count, 0 for three quarters of the open-file limit, or -1 for no limit", c.MaxConns))
	}
	if c.RoundPause < 0 || c.RoundPause > 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("round-pause %v: want 0 (off) to 10ms", c.RoundPause))
	}
	if c.Registration != "open" && c.Registration != "closed" {
		errs = append(errs, fmt.Errorf("registration %q: want open or closed", c.Registration))
	}
	switch c.CachePolicy {
	case "lru", "lfu", "fifo":
	default:
		errs = append(errs, fmt.Errorf("cache-policy %q: want lru, lfu or fifo", c.CachePolicy))
	}
	if c.Insecure && c.ClusterTLS != nil {
		errs = append(errs, errors.New("insecure: cannot be combined with the cluster TLS certificates"))
	}
	if c.HistoryCompactInterval < 0 {
		errs = append(errs, errors.New("history compact interval must not be negative"))
	}
	if c.SessionTTL < 0 {
		errs = append(errs, errors.New("session TTL must not be negative"))
	}
	if c.RateLimit < 0 {
		errs = append(errs, errors.New("rate-limit: must not be negative (0: no limit)"))
	}
	if err := c.Limits.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.TickInterval <= 0 || c.ElectionTicks < 2 {
		errs = append(errs, errors.New("tick interval must be positive and election ticks at least 2"))
	}
	return errors.Join(errs...)
}

// MayCreate reports whether this node creates a new cluster when its data
// directory is empty: it has no Join, or it is the InitialNode.
func (c *Config) MayCreate() bool {
	return len(c.Join) == 0 || c.InitialNode == c.ID
}

// AdvertisedCluster returns the internal address other nodes should dial.
func (c *Config) AdvertisedCluster() string {
	if c.Advertise != "" {
		return c.Advertise
	}
	return c.ClusterAddr
}

// AdvertisedHTTP returns the HTTP address other nodes and clients are told.
func (c *Config) AdvertisedHTTP() string {
	if c.AdvertiseHTTP != "" {
		return c.AdvertiseHTTP
	}
	return c.HTTPAddr
}
