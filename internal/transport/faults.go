package transport

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Faults injects network faults into one Transport, for tests. All methods
// are safe for concurrent use. Faults act on this transport only: to cut a
// node off completely, a test isolates it on every transport involved (or
// calls IsolateAll on the node itself).
type Faults struct {
	mu     sync.RWMutex
	cut    map[string]struct{} // isolated peer addresses or node ids
	noDial map[string]struct{} // peer addresses this transport cannot dial
	all    bool

	active   atomic.Bool   // any isolation set; lets the hot path skip the lock
	dropRate atomic.Uint64 // math.Float64bits of the probability
	delay    atomic.Int64  // time.Duration
}

// Isolate cuts this transport off from peer: everything sent to peer (Raft
// messages, calls, snapshots) is dropped or fails with ErrUnreachable, and
// every incoming connection or frame whose handshake names peer as its
// listen address or node id is refused.
func (f *Faults) Isolate(peer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut == nil {
		f.cut = make(map[string]struct{})
	}
	f.cut[peer] = struct{}{}
	f.active.Store(true)
}

// CutDial makes this transport's dials to the peer address hang until the
// dial timeout and then fail, as when its name still resolves to an
// address nothing answers at any more: a stopped or restarted Kubernetes
// pod's old IP, until the cluster DNS's cache expires. Connections made
// before stay up (a stopped peer closes its own). Connections the peer
// opens to this transport still carry its calls and their answers, and
// its Raft messages; this transport's own messages and calls to the peer,
// which need a connection it dials, fail.
func (f *Faults) CutDial(peer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noDial == nil {
		f.noDial = make(map[string]struct{})
	}
	f.noDial[peer] = struct{}{}
	f.active.Store(true)
}

// Heal undoes Isolate(peer) and CutDial(peer). Connections are
// re-established on demand, Raft senders within their redial backoff.
func (f *Faults) Heal(peer string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cut, peer)
	delete(f.noDial, peer)
	f.active.Store(f.all || len(f.cut) > 0 || len(f.noDial) > 0)
}

// IsolateAll isolates this transport from every peer.
func (f *Faults) IsolateAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = true
	f.active.Store(true)
}

// HealAll removes every isolation, including those set with Isolate.
func (f *Faults) HealAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = false
	clear(f.cut)
	clear(f.noDial)
	f.active.Store(false)
}

// SetDropRate makes SendRaft drop each message with probability p (0 to 1).
// Dropped messages are counted in Stats.RaftDropped.
func (f *Faults) SetDropRate(p float64) {
	p = math.Max(0, math.Min(1, p))
	f.dropRate.Store(math.Float64bits(p))
}

// SetDelay delays every Raft message and call sent by this transport by d.
// Raft messages keep their order; the delay adds latency, not a throughput
// limit. Zero removes the delay. It applies to messages sent afterwards.
func (f *Faults) SetDelay(d time.Duration) {
	f.delay.Store(int64(max(d, 0)))
}

// isolated reports whether traffic to or from any of the given peer names
// (address, node id) is cut.
func (f *Faults) isolated(names ...string) bool {
	if !f.active.Load() {
		return false
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.all {
		return true
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		if _, ok := f.cut[n]; ok {
			return true
		}
	}
	return false
}

// dialCut reports whether dials to addr fail (CutDial).
func (f *Faults) dialCut(addr string) bool {
	if !f.active.Load() {
		return false
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, ok := f.noDial[addr]
	return ok
}

// drop reports whether one Raft message should be dropped.
func (f *Faults) drop() bool {
	p := math.Float64frombits(f.dropRate.Load())
	return p > 0 && rand.Float64() < p
}

// currentDelay returns the configured delay.
func (f *Faults) currentDelay() time.Duration {
	return time.Duration(f.delay.Load())
}
