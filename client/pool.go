package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/partkey"
)

// PoolRefresh is how old a Pool's partition map may grow before the next
// pick asks the servers again, in the background.
const PoolRefresh = time.Second

// Pool is one Client per server of a cluster that sends each request
// about a kv key or a queue to the server leading its partition, when that
// server is one of the pool's: the request then skips the hop a server
// forwards it over to the leader. Picks never wait: until the pool has a
// map, and for a partition led by a server outside the pool, the caller's
// fallback is used. A map gone stale because a leader moved costs the hop
// again, never a wrong answer; a server that is down fails what is sent to
// it, as with any Client, until the next refresh, which routes nothing to a
// server that does not answer.
// A Pool only ever uses the Clients it was given. It is safe for
// concurrent use.
type Pool struct {
	clients []*Client
	// byAddr maps the host:port of each client's base URL, and the
	// address each server says it advertises (PartitionMap.Self), to its
	// client; replaced whole by Refresh, read without a lock.
	byAddr atomic.Pointer[map[string]*Client]

	m          atomic.Pointer[pooledMap]
	refreshing atomic.Bool
	lastTry    atomic.Int64 // unix ns of the last background refresh started
}

// pooledMap is a merged partition map and when it was fetched.
type pooledMap struct {
	m  PartitionMap
	at time.Time
}

// NewPool returns a Pool over clients, one per server of one cluster.
func NewPool(clients ...*Client) *Pool {
	p := &Pool{clients: clients}
	byAddr := map[string]*Client{}
	for _, c := range clients {
		if hp := hostPort(c.bases[0]); hp != "" {
			byAddr[hp] = c
		}
	}
	p.byAddr.Store(&byAddr)
	return p
}

// Refresh asks every server of the pool for its partition map and merges
// them: for each partition, the answer of a server that says it leads it,
// else the first that knows a leader (a server knows the leaders of the
// partitions it holds a replica of, and what it heard of others). A server
// of the pool that does not answer is named leader of nothing, whatever
// the others say. It fails only when no server answers.
func (p *Pool) Refresh(ctx context.Context) error {
	maps := make([]*PartitionMap, len(p.clients))
	errs := make([]error, len(p.clients))
	var wg sync.WaitGroup
	for i, c := range p.clients {
		wg.Go(func() { maps[i], errs[i] = c.Partitions(ctx) })
	}
	wg.Wait()
	byAddr := p.learnNames(maps)
	// A server of the pool that did not answer is likely down: until a
	// refresh hears from it again, no partition is routed to it, even
	// while the others still name it leader (before a new one is elected).
	down := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			for addr, c := range byAddr {
				if c == p.clients[i] {
					down[addr] = true
				}
			}
		}
	}
	var merged *PartitionMap
	for i, m := range maps {
		if m == nil || !m.wellFormed() {
			continue // no answer, a server that knows no cluster yet, or a malformed map
		}
		if merged == nil {
			merged = &PartitionMap{Hash: m.Hash, Partitions: m.Partitions, Leaders: make([]string, m.Partitions)}
		}
		if m.Hash != merged.Hash || m.Partitions != merged.Partitions {
			continue // a server of another cluster: not trusted
		}
		self := m.Self
		if self == "" {
			self = hostPort(p.clients[i].bases[0])
		}
		for j, addr := range m.Leaders {
			if addr != "" && !down[addr] && (merged.Leaders[j] == "" || addr == self) {
				merged.Leaders[j] = addr
			}
		}
	}
	if merged == nil {
		if err := errors.Join(errs...); err != nil {
			return err
		}
		return errors.New("client: no server knows the partition map yet")
	}
	p.m.Store(&pooledMap{m: *merged, at: time.Now()})
	return nil
}

// learnNames returns the pool's names with the address each server that
// answered says it advertises (PartitionMap.Self) added for its client,
// and stores them: a pool built on other names for the servers
// ("localhost" for an advertised 127.0.0.1, a DNS alias) routes to them.
// An address that is the base URL of another client of the pool keeps
// that client.
func (p *Pool) learnNames(maps []*PartitionMap) map[string]*Client {
	old := *p.byAddr.Load()
	byAddr := make(map[string]*Client, len(old))
	for addr, c := range old {
		byAddr[addr] = c
	}
	for i, m := range maps {
		if m == nil || m.Self == "" {
			continue
		}
		if c, ok := byAddr[m.Self]; ok && hostPort(c.bases[0]) == m.Self {
			continue
		}
		byAddr[m.Self] = p.clients[i]
	}
	p.byAddr.Store(&byAddr)
	return byAddr
}

// Reach returns how many partitions the current map names a leader of
// that is one of the pool's servers, and how many partitions there are
// (0, 0 before the pool has a map). Servers are matched by the host:port
// they advertise, learnt from their answers, or by their base URL's: a
// pool of servers that never answered reaches none, and every request
// goes to the caller's fallback. (A Client on a load balancer is taken for
// whichever node answered it: its requests still reach some node, which
// forwards them, so that costs the hop, never a wrong answer.)
func (p *Pool) Reach() (led, partitions int) {
	pm := p.m.Load()
	if pm == nil {
		return 0, 0
	}
	byAddr := *p.byAddr.Load()
	for _, addr := range pm.m.Leaders {
		if _, ok := byAddr[addr]; ok {
			led++
		}
	}
	return led, pm.m.Partitions
}

// ForKV returns the Client of the server leading kv key's partition, or
// fallback when the pool does not know it or holds no Client for it.
func (p *Pool) ForKV(key string, fallback *Client) *Client {
	return p.pick(KVRoutingKey(key), fallback)
}

// ForQueue returns the Client of the server leading queue's partition, or
// fallback.
func (p *Pool) ForQueue(queue string, fallback *Client) *Client {
	return p.pick(queue, fallback)
}

// ForRoom returns the Client of the server leading chat room's partition,
// or fallback.
func (p *Pool) ForRoom(room string, fallback *Client) *Client {
	return p.pick(partkey.Room(room), fallback)
}

// pick looks routingKey up in the current map, and starts a refresh in
// the background when the map is missing or older than PoolRefresh (at
// most one at a time, and one per PoolRefresh while servers fail).
func (p *Pool) pick(routingKey string, fallback *Client) *Client {
	pm := p.m.Load()
	now := time.Now()
	if (pm == nil || now.Sub(pm.at) > PoolRefresh) && now.UnixNano()-p.lastTry.Load() > int64(PoolRefresh) &&
		p.refreshing.CompareAndSwap(false, true) {
		p.lastTry.Store(now.UnixNano())
		go func() {
			defer p.refreshing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = p.Refresh(ctx) // a failed refresh keeps the old map
		}()
	}
	if pm == nil {
		return fallback
	}
	if c, ok := (*p.byAddr.Load())[pm.m.LeaderOf(routingKey)]; ok {
		return c
	}
	return fallback
}
