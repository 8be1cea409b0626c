// Package tracker is the presence service of one node: it counts the node's
// live connections per user, proposes the presence leases (internal/presence
// holds their commands, state machine and reads) through a Replicator, and
// answers who is online anywhere — for the API, for the rooms list and
// members, and as presence frames on live streams.
//
// It is kept apart from internal/presence, a pure domain package (standard
// library, state, errs, wire), because it also knows rooms (internal/chat)
// and stream frames (internal/stream). It needs no Raft, storage or
// transport: the node hands it the partition Router as its Replicator.
package tracker

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/state"
)

// Tracker defaults.
const (
	// DefaultTTL is the lease a renewal grants: renewed every third of it,
	// a dead node's users show offline within TTL + presence.Grace, 12 s.
	DefaultTTL = 11 * time.Second
	// maxPresenceUsers caps the users one renew or release command carries.
	maxPresenceUsers = 1024
	// expireLimit caps the leases one Expire command deletes.
	expireLimit = 1024
	// expireRounds bounds the Expire commands per partition per pass.
	expireRounds = 8
)

// Tracker tracks who is online through this node and answers who is
// online anywhere. The stream calls Connected when a WebSocket
// authenticates and the returned release when it closes; Run renews this
// node's leases of its connected users every TTL/3, one command per
// partition (the user's partition: presence.Fold(username)), ends a user's
// lease at once when the last connection closes, and has the partitions this
// node leads drop expired leases. Reads are stale reads of the nearest
// replica (presence is advisory: a few hundred ms of lag does not matter
// next to the lease's seconds). It is safe for concurrent use.
type Tracker struct {
	node  string
	ttl   time.Duration
	r     state.Replicator    // the partition Router
	leads func(p uint64) bool // this node leads partition p
	now   func() time.Time
	log   *slog.Logger

	mu    sync.Mutex
	conns map[string]*userConns // folded username -> live connections
	dirty map[string]struct{}   // folded usernames whose lease must change now
	wake  chan struct{}
}

// userConns counts one user's connections on this node.
type userConns struct {
	name string // as first given to Connected
	n    int
}

// New returns a tracker for node id that renews leases of ttl (DefaultTTL
// when zero) through r; leads reports whether this node's replica leads a
// partition (it expires the leases of the partitions it leads).
func New(id string, ttl time.Duration, r state.Replicator, leads func(partition uint64) bool, log *slog.Logger) *Tracker {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tracker{
		node: id, ttl: ttl, r: r, leads: leads, now: time.Now, log: log,
		conns: map[string]*userConns{},
		dirty: map[string]struct{}{},
		wake:  make(chan struct{}, 1),
	}
}

// Connected records one live connection of user on this node and returns
// the function to call exactly once when it closes (later calls do
// nothing). A user's first connection is proposed online at once; the
// release of the last one proposes the lease's end at once.
func (p *Tracker) Connected(user string) (release func()) {
	if user == "" || len(user) > presence.MaxNameLen {
		return func() {}
	}
	key := presence.Fold(user)
	p.mu.Lock()
	c := p.conns[key]
	if c == nil {
		c = &userConns{name: user}
		p.conns[key] = c
		p.markLocked(key)
	}
	c.n++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if c.n--; c.n == 0 {
				delete(p.conns, key)
				p.markLocked(key)
			}
		})
	}
}

// ReleaseAll ends every lease this node holds, for a graceful shutdown: its
// users show offline at once instead of when their leases run out. Later
// releases of the connections change nothing.
func (p *Tracker) ReleaseAll(ctx context.Context) error {
	p.mu.Lock()
	for key := range p.conns {
		p.dirty[key] = struct{}{}
	}
	clear(p.conns)
	p.mu.Unlock()
	return p.flush(ctx, false)
}

// markLocked queues a change of user's lease and wakes Run.
func (p *Tracker) markLocked(key string) {
	p.dirty[key] = struct{}{}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run renews, releases and expires leases until ctx ends.
func (p *Tracker) Run(ctx context.Context) {
	renew := time.NewTicker(p.ttl / 3)
	defer renew.Stop()
	expire := time.NewTicker(3 * p.ttl)
	defer expire.Stop()
	var lastWarn time.Time
	warn := func(msg string, err error) {
		if err != nil && ctx.Err() == nil && time.Since(lastWarn) >= time.Minute {
			lastWarn = time.Now()
			p.log.Warn(msg, "err", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
			warn("presence update failed; will retry", p.flush(ctx, false))
		case <-renew.C:
			warn("presence renewal failed; will retry", p.flush(ctx, true))
		case <-expire.C:
			warn("presence expiry failed; will retry", p.expire(ctx))
		}
	}
}

// flush proposes the queued lease changes, and with all a renewal of every
// connected user, grouped by partition. Releases that fail are queued
// again; a failed renewal is retried by the next periodic one.
func (p *Tracker) flush(ctx context.Context, all bool) error {
	renews, releases := p.takeChanges(all)
	parts := map[uint64]bool{}
	for q := range renews {
		parts[q] = true
	}
	for q := range releases {
		parts[q] = true
	}
	ctx, cancel := context.WithTimeout(ctx, p.ttl/3)
	defer cancel()
	errList := make(chan error, len(parts))
	var wg sync.WaitGroup
	for q := range parts {
		wg.Go(func() {
			if err := p.proposeUsers(ctx, q, releases[q], false); err != nil {
				p.requeue(releases[q])
				errList <- err
			}
			if err := p.proposeUsers(ctx, q, renews[q], true); err != nil {
				errList <- err
			}
		})
	}
	wg.Wait()
	close(errList)
	return <-errList
}

// takeChanges empties the queue and returns the users to renew and to
// release, by partition, each list sorted.
func (p *Tracker) takeChanges(all bool) (renews, releases map[uint64][]string) {
	renews, releases = map[uint64][]string{}, map[uint64][]string{}
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.dirty {
		q := p.r.PartitionOf(key)
		if c := p.conns[key]; c != nil && !all {
			renews[q] = append(renews[q], c.name)
		} else if c == nil {
			releases[q] = append(releases[q], key)
		}
	}
	clear(p.dirty)
	if all {
		for key, c := range p.conns {
			q := p.r.PartitionOf(key)
			renews[q] = append(renews[q], c.name)
		}
	}
	for _, m := range []map[uint64][]string{renews, releases} {
		for _, users := range m {
			slices.Sort(users)
		}
	}
	return renews, releases
}

// requeue queues users for another release attempt unless they connected
// again meanwhile.
func (p *Tracker) requeue(users []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, key := range users {
		if p.conns[key] == nil {
			p.dirty[key] = struct{}{}
		}
	}
}

// proposeUsers proposes renewals (or releases) of sorted users in
// partition q, maxPresenceUsers per command.
func (p *Tracker) proposeUsers(ctx context.Context, q uint64, users []string, renew bool) error {
	for chunk := range slices.Chunk(users, maxPresenceUsers) {
		cmd := presence.EncodeRelease(presence.Release{Node: p.node, Users: chunk})
		if renew {
			cmd = presence.EncodeRenew(presence.Renew{Node: p.node, TTLMs: uint64(p.ttl.Milliseconds()), Users: chunk})
		}
		res, err := p.r.Propose(ctx, q, "", cmd)
		if err == nil {
			_, err = presence.DecodeCountResult(res)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// expire drops expired leases in the partitions this node leads, after a
// local read shows there are some.
func (p *Tracker) expire(ctx context.Context) error {
	var firstErr error
	for _, q := range p.r.Partitions() {
		if !p.leads(q) {
			continue
		}
		if err := p.expirePartition(ctx, q); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

func (p *Tracker) expirePartition(ctx context.Context, q uint64) error {
	var found bool
	if _, err := p.r.Read(ctx, q, true, func(r state.Reader) error {
		var err error
		found, err = presence.HasExpired(r, p.now().UnixMilli())
		return err
	}); err != nil || !found {
		return err
	}
	for range expireRounds {
		ctx, cancel := context.WithTimeout(ctx, p.ttl/3)
		res, err := p.r.Propose(ctx, q, "", presence.EncodeExpire(presence.Expire{Limit: expireLimit}))
		cancel()
		if err != nil {
			return err
		}
		_, more, err := presence.DecodeExpireResult(res)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// OnlineUsers returns the users online anywhere in the cluster, in
// case-insensitive name order: a stale read of every partition's leases,
// concurrently, on the nearest replica.
func (p *Tracker) OnlineUsers(ctx context.Context) ([]string, error) {
	parts := p.r.Partitions()
	results := make([][]string, len(parts))
	errList := make([]error, len(parts))
	nowMs := p.now().UnixMilli()
	var wg sync.WaitGroup
	for i, q := range parts {
		wg.Go(func() {
			_, errList[i] = p.r.Read(ctx, q, true, func(r state.Reader) error {
				var err error
				results[i], err = presence.Online(r, nowMs)
				return err
			})
		})
	}
	wg.Wait()
	for _, err := range errList {
		if err != nil {
			return nil, err
		}
	}
	users := slices.Concat(results...)
	slices.SortFunc(users, func(a, b string) int { return strings.Compare(presence.Fold(a), presence.Fold(b)) })
	return users, nil
}

// Online reports for each of users whether it is online anywhere, keyed as
// given: a stale read per partition the users live in, concurrently.
func (p *Tracker) Online(ctx context.Context, users []string) (map[string]bool, error) {
	byPart := map[uint64][]string{}
	for _, u := range users {
		q := p.r.PartitionOf(presence.Fold(u))
		byPart[q] = append(byPart[q], u)
	}
	nowMs := p.now().UnixMilli()
	var mu sync.Mutex
	out := make(map[string]bool, len(users))
	var firstErr error
	var wg sync.WaitGroup
	for q, list := range byPart {
		wg.Go(func() {
			var on map[string]bool
			_, err := p.r.Read(ctx, q, true, func(r state.Reader) error {
				var err error
				on, err = presence.IsOnline(r, list, nowMs)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			for u, v := range on {
				out[u] = v
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
