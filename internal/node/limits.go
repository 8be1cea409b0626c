package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/parley-chat/parley/internal/partition"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// Limiter timing.
const (
	// limitCallTimeout bounds one call to an owner; past it the request is
	// decided by this node's own backstop, at its share of the rate.
	limitCallTimeout = 500 * time.Millisecond
	// limitPeekTimeout bounds an owner's question to the other replicas
	// about a key it has no bucket for.
	limitPeekTimeout = 200 * time.Millisecond
	// limitSyncEvery is how often slot counts due are sent to owners.
	limitSyncEvery = ratelimit.Settle / 2
	// limitWarnEvery spaces the warnings about unreachable owners.
	limitWarnEvery = time.Minute
	// maxLimitOps bounds the operations of one limit call.
	maxLimitOps = 4096
)

// limitConfig turns the node's configuration into the limiter's.
func limitConfig(c config.Config) ratelimit.Config {
	l := c.Limits
	return ratelimit.Config{
		Rates: map[string]ratelimit.Rate{
			ratelimit.Posts:            l.Posts,
			ratelimit.QueueSends:       l.QueueSends,
			ratelimit.RoomCreates:      l.RoomCreates,
			ratelimit.QueueCreates:     l.QueueCreates,
			ratelimit.LinkCreates:      l.LinkCreates,
			ratelimit.Searches:         l.Searches,
			ratelimit.LoginsPerUser:    l.LoginsPerUser,
			ratelimit.LoginsPerAddress: {N: c.RateLimit, Per: time.Minute},
		},
		Slots: map[string]int{ratelimit.Streams: l.Streams, ratelimit.LongPolls: l.LongPolls},
	}
}

// limitRoute is what the limiter needs from the node: where a key's owner
// is, and a way to call it.
type limitRoute struct {
	// partitionOf returns the partition a key hashes to; its leader owns
	// the key.
	partitionOf func(key string) uint64
	// owner returns the address of partition p's leader as this node knows
	// it (attempt picks further candidates) and whether that is this node.
	owner func(p uint64, attempt int) (addr string, local bool)
	// leads reports whether this node leads p, else the leader it knows.
	leads func(p uint64) (leader uint64, local bool)
	// hint records a leader another node named.
	hint func(p, leader uint64)
	// peers returns the addresses of p's other replicas, a former leader
	// among them.
	peers func(p uint64) []string
	// call sends a limit call to addr and returns its result.
	call func(ctx context.Context, addr string, body []byte) ([]byte, error)
	// nodes returns how many nodes the cluster has: each decides alone at
	// its share of a rate while the owner cannot be reached.
	nodes func() int
}

// limiter enforces the per-user and per-address limits across the cluster
// (docs/LIMITS.md): it owns the keys of the partitions this node leads, and
// asks the owners of the others. It implements api.Limiter and
// account.Limiter; it is safe for concurrent use.
type limiter struct {
	cfg    ratelimit.Config
	holder string           // this node incarnation's name as a slot holder
	table  *ratelimit.Table // the keys this node owns
	// backstop decides alone, at this node's share of each rate
	// (ratelimit.Config.Share), while a key's owner cannot be reached;
	// made again when the cluster's size changes.
	backstop atomic.Pointer[shareTable]
	stash    *ratelimit.Stash
	holds    *ratelimit.Holdings
	route    limitRoute
	now      func() time.Time
	log      *slog.Logger
	warned   atomic.Int64 // Unix ns of the last owner-unreachable warning
}

var (
	_ api.Limiter     = (*limiter)(nil)
	_ account.Limiter = (*limiter)(nil)
)

// newLimiter builds the node's limiter; the engine and transport must exist.
func (n *Node) newLimiter() *limiter {
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	return newLimiterWith(limitConfig(n.cfg), n.cfg.ID+"/"+hex.EncodeToString(nonce[:]), limitRoute{
		partitionOf: n.router.PartitionOf,
		owner: func(p uint64, attempt int) (string, bool) {
			addr := n.router.LeaderAddr(p, attempt)
			return addr, addr != "" && addr == n.self()
		},
		leads: n.engine.Leader,
		hint:  n.router.HintLeader,
		peers: func(p uint64) []string {
			self := n.self()
			var out []string
			for _, addr := range n.dir.ReplicaAddrs(p) {
				if addr != self {
					out = append(out, addr)
				}
			}
			return out
		},
		call: n.limitSend,
		nodes: func() int {
			if m := n.Map(); m != nil {
				return len(m.Nodes)
			}
			return 1
		},
	}, time.Now, n.log)
}

// newLimiterWith builds a limiter for the slot holder named holder (unique
// to this incarnation of the node).
func newLimiterWith(cfg ratelimit.Config, holder string, route limitRoute, now func() time.Time, log *slog.Logger) *limiter {
	return &limiter{
		cfg:    cfg,
		holder: holder,
		table:  ratelimit.NewTable(cfg),
		stash:  ratelimit.NewStash(cfg),
		holds:  ratelimit.NewHoldings(),
		route:  route,
		now:    now,
		log:    log,
	}
}

// Take takes one token of the rate limit named for key, or returns an
// errs.RateLimited error saying when to retry. The owner is asked only
// when this node has no token stashed and no fresh refusal.
func (l *limiter) Take(ctx context.Context, limit, key string) error {
	r, ok := l.cfg.Rates[limit]
	if !ok || r.Off() {
		return nil
	}
	key = presence.Fold(key)
	now := l.now()
	p := l.route.partitionOf(key)
	if _, local := l.route.owner(p, 0); local {
		if got, wait := l.ownerTake(ctx, p, limit, key, 1, now); got == 0 {
			return ratelimit.Refusal(limit, r, wait)
		}
		return nil
	}
	spent, wait, want := l.stash.Spend(limit, key, now)
	switch {
	case spent:
		return nil
	case wait > 0:
		return ratelimit.Refusal(limit, r, wait)
	}
	got, wait := l.takeRemote(ctx, p, limit, key, want, now)
	l.stash.Fill(limit, key, want, got, wait, now)
	if got == 0 {
		return ratelimit.Refusal(limit, r, wait)
	}
	return nil
}

// takeRemote asks p's leader for want tokens; when it cannot be reached,
// this node's own bucket decides.
func (l *limiter) takeRemote(ctx context.Context, p uint64, limit, key string, want int, now time.Time) (int, time.Duration) {
	res, err := l.ask(ctx, p, limitOp{Limit: limit, Key: key, N: want})
	if err != nil {
		l.ownerUnreachable(p, err)
		return l.shareTable().Take(limit, key, 1, now)
	}
	return res.N, time.Duration(res.WaitNs)
}

// Hold takes one slot of the concurrency limit named for key until release
// is called (once; later calls do nothing), or returns an errs.RateLimited
// error.
func (l *limiter) Hold(ctx context.Context, limit, key string) (release func(), err error) {
	capN, ok := l.cfg.Slots[limit]
	if !ok || capN <= 0 {
		return func() {}, nil
	}
	key = presence.Fold(key)
	now := l.now()
	if c, local := l.holds.Reserve(limit, key, now); !local {
		granted := l.claim(ctx, c, capN, now)
		l.holds.Acquired(c, granted, now)
		if !granted {
			return nil, ratelimit.Refusal(limit, capN, time.Second)
		}
	}
	var once sync.Once
	return func() { once.Do(func() { l.holds.Release(limit, key, l.now()) }) }, nil
}

// claim sends a slot claim to the key's owner; when it cannot be reached,
// this node's own count decides.
func (l *limiter) claim(ctx context.Context, c ratelimit.Claim, capN int, now time.Time) bool {
	p := l.route.partitionOf(c.Key)
	if _, local := l.route.owner(p, 0); local {
		return l.table.Hold(c.Limit, c.Key, l.holder, c.N, c.Seq, now)
	}
	res, err := l.ask(ctx, p, limitOp{Limit: c.Limit, Key: c.Key, N: c.N, Seq: c.Seq, Hold: true})
	if err != nil {
		l.ownerUnreachable(p, err)
		return c.N <= capN
	}
	return res.N > 0
}

// ask sends one operation to the leader of p, following one redirect. A
// leader that turns out to be this node answers from its own table.
func (l *limiter) ask(ctx context.Context, p uint64, op limitOp) (limitResult, error) {
	op.Group = p
	var err error
	for attempt := range 2 {
		addr, local := l.route.owner(p, attempt)
		var res []limitResult
		switch {
		case local:
			// A redirect may name this node while it does not lead (yet,
			// or any more): its answer is then NotLeader, never a refusal.
			res = l.serve(ctx, limitRequest{Holder: l.holder, Ops: []limitOp{op}})
			addr = "this node"
		case addr == "":
			return limitResult{}, errs.New(errs.Unavailable, "no leader known for partition %d", p)
		default:
			if res, err = l.send(ctx, addr, limitRequest{Holder: l.holder, Ops: []limitOp{op}}); err != nil {
				return limitResult{}, err
			}
			addr = "node " + addr
		}
		if !res[0].NotLeader {
			return res[0], nil
		}
		l.route.hint(p, res[0].Leader)
		err = fmt.Errorf("%s does not lead partition %d", addr, p)
	}
	return limitResult{}, err
}

// shareTable is a table of the rates at one node's share.
type shareTable struct {
	nodes int
	t     *ratelimit.Table
}

// shareTable returns the backstop for the cluster's current size.
func (l *limiter) shareTable() *ratelimit.Table {
	n := 1
	if l.route.nodes != nil {
		n = max(l.route.nodes(), 1)
	}
	for {
		cur := l.backstop.Load()
		if cur != nil && cur.nodes == n {
			return cur.t
		}
		next := &shareTable{nodes: n, t: ratelimit.NewTable(l.cfg.Share(n))}
		if l.backstop.CompareAndSwap(cur, next) {
			return next.t
		}
	}
}

// ownerUnreachable notes that an owner could not be reached and this node decided
// alone, warning at most every limitWarnEvery.
func (l *limiter) ownerUnreachable(p uint64, err error) {
	now := l.now().UnixNano()
	last := l.warned.Load()
	if now-last >= int64(limitWarnEvery) && l.warned.CompareAndSwap(last, now) {
		l.log.Warn("limit owner unreachable; this node limits alone at its share until it answers", "partition", p, "err", err)
	}
}

// limitRequest is the body of a limit call: operations on keys the
// receiver owns, from the slot holder Holder.
type limitRequest struct {
	Holder string    `json:"h,omitempty"`
	Ops    []limitOp `json:"ops"`
}

// limitOp takes N tokens of (Limit, Key); with Hold it sets the holder's
// slot count to N with sequence Seq; with Peek it asks for the receiver's
// bucket of (Limit, Key), whether or not it leads. Group is the partition
// Key hashes to.
type limitOp struct {
	Group uint64 `json:"g"`
	Limit string `json:"l"`
	Key   string `json:"k"`
	N     int    `json:"n,omitempty"`
	Seq   uint64 `json:"s,omitempty"`
	Hold  bool   `json:"hold,omitempty"`
	Peek  bool   `json:"peek,omitempty"`
}

// limitResult answers one limitOp: tokens granted (and WaitNs until one is
// back when none was), for a hold N = 1 when allowed, for a peek the
// bucket's Tokens when Known; NotLeader when the receiver does not lead
// Group, naming the leader it knows.
type limitResult struct {
	N         int     `json:"n,omitempty"`
	WaitNs    int64   `json:"w,omitempty"`
	Tokens    float64 `json:"t,omitempty"`
	Known     bool    `json:"known,omitempty"`
	NotLeader bool    `json:"nl,omitempty"`
	Leader    uint64  `json:"lead,omitempty"`
}

// serve applies a limit request to the keys this node owns.
func (l *limiter) serve(ctx context.Context, req limitRequest) []limitResult {
	now := l.now()
	out := make([]limitResult, len(req.Ops))
	for i, op := range req.Ops {
		if op.Peek {
			out[i].Tokens, out[i].Known = l.table.Peek(op.Limit, op.Key, now)
			continue
		}
		if lead, local := l.route.leads(op.Group); !local {
			out[i] = limitResult{NotLeader: true, Leader: lead}
			continue
		}
		if op.Hold {
			if l.table.Hold(op.Limit, op.Key, req.Holder, op.N, op.Seq, now) {
				out[i].N = 1
			}
			continue
		}
		got, wait := l.ownerTake(ctx, op.Group, op.Limit, op.Key, op.N, now)
		out[i] = limitResult{N: got, WaitNs: int64(wait)}
	}
	return out
}

// ownerTake takes up to n tokens of a key this node owns. A key it has no
// bucket for may have one on a former owner (leadership moved): the other
// replicas are asked first, and the bucket starts from the lowest they
// hold, so a change of leader does not hand the key a fresh burst.
func (l *limiter) ownerTake(ctx context.Context, p uint64, limit, key string, n int, now time.Time) (int, time.Duration) {
	if !l.table.Known(limit, key) {
		if tokens, ok := l.peekPeers(ctx, p, limit, key); ok {
			l.table.Seed(limit, key, tokens, now)
		}
	}
	return l.table.Take(limit, key, n, now)
}

// peekPeers asks p's other replicas, in parallel, for their bucket of
// (limit, key) and returns the lowest; ok is false when none has one (or
// none answered within limitPeekTimeout).
func (l *limiter) peekPeers(ctx context.Context, p uint64, limit, key string) (tokens float64, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, limitPeekTimeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	req := limitRequest{Ops: []limitOp{{Group: p, Limit: limit, Key: key, Peek: true}}}
	for _, addr := range l.route.peers(p) {
		wg.Go(func() {
			res, err := l.send(ctx, addr, req)
			if err != nil || !res[0].Known {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !ok || res[0].Tokens < tokens {
				tokens, ok = res[0].Tokens, true
			}
		})
	}
	wg.Wait()
	return tokens, ok
}

// send makes one limit call to addr.
func (l *limiter) send(ctx context.Context, addr string, req limitRequest) ([]limitResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	b, err := l.route.call(ctx, addr, body)
	if err != nil {
		return nil, err
	}
	var res []limitResult
	if err := json.Unmarshal(b, &res); err != nil || len(res) != len(req.Ops) {
		return nil, fmt.Errorf("bad limit reply from %s (%d results for %d operations): %v", addr, len(res), len(req.Ops), err)
	}
	return res, nil
}

// limitSend sends a limit call to addr within limitCallTimeout.
func (n *Node) limitSend(ctx context.Context, addr string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limitCallTimeout)
	defer cancel()
	var rep partition.Reply
	if err := n.call(ctx, addr, methodLimit, body, &rep); err != nil {
		return nil, err
	}
	if err := rep.Err(0); err != nil {
		return nil, err
	}
	return rep.Result, nil
}

// callLimit answers a limit call: this node owns the keys of the
// partitions it leads (limiter.serve).
func (n *Node) callLimit(ctx context.Context, _ string, body []byte) (partition.Reply, error) {
	l := n.limits.Load()
	if l == nil {
		return partition.Reply{Code: errs.Unavailable, Message: "limiter not started"}, nil
	}
	var req limitRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return partition.Reply{}, fmt.Errorf("bad limit request: %w", err)
	}
	if len(req.Ops) > maxLimitOps {
		return partition.Reply{}, fmt.Errorf("bad limit request: %d operations, at most %d", len(req.Ops), maxLimitOps)
	}
	res, err := json.Marshal(l.serve(ctx, req))
	return partition.Reply{Result: res}, err
}
