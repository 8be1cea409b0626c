package ratelimit

import (
	"sync"
	"time"
)

// Timing of Holdings.Due.
const (
	// Settle is how long a node keeps slots released locally before it
	// tells the owner: a long-poll loop takes its slot back meanwhile
	// without asking anyone.
	Settle = time.Second
	// Renew is how often a node renews every count it holds; a third of
	// DefaultLeaseTTL.
	Renew = DefaultLeaseTTL / 3
)

// Holdings is a node's side of the concurrency limits: per (limit, key), the
// slots it uses (including those being asked for) and the count the owner
// last granted it. It is safe for concurrent use.
type Holdings struct {
	mu  sync.Mutex
	m   map[limitKey]*holding
	seq uint64 // the last sequence number given to a Claim
}

// holding is one (limit, key) on this node; times are Unix ns.
type holding struct {
	inUse   int    // slots in use or being asked for
	granted int    // the count the owner accepted last
	seen    uint64 // the Claim seq granted was learnt from
	sent    int64  // when a count was last sent
	shrunk  int64  // when inUse last fell below granted
}

// Claim is one message to an owner: this node uses N slots of (Limit, Key).
// Seq orders the node's claims.
type Claim struct {
	Limit, Key string
	N          int
	Seq        uint64
}

// NewHoldings returns empty Holdings.
func NewHoldings() *Holdings { return &Holdings{m: map[limitKey]*holding{}} }

// Reserve takes one more slot of (limit, key). When the node already holds
// one granted and unused, it is taken at once (local is true); otherwise the
// caller must send the returned claim to the owner and report the answer
// with Acquired.
func (h *Holdings) Reserve(limit, key string, now time.Time) (c Claim, local bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := limitKey{limit, key}
	e := h.m[k]
	if e == nil {
		e = &holding{}
		h.m[k] = e
	}
	e.inUse++
	if e.inUse <= e.granted {
		return Claim{}, true
	}
	h.seq++
	e.sent = now.UnixNano()
	return Claim{Limit: limit, Key: key, N: e.inUse, Seq: h.seq}, false
}

// Acquired records the owner's answer to a claim from Reserve: ok grants
// the slot; a refusal gives the reservation back.
func (h *Holdings) Acquired(c Claim, ok bool, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.m[limitKey{c.Limit, c.Key}]
	if e == nil {
		return
	}
	if ok {
		h.grant(e, c)
		return
	}
	e.inUse--
	// A later claim may have carried the refused slot; sync it down.
	e.shrunk = now.UnixNano()
	h.forget(c.Limit, c.Key, e)
}

// Release gives one slot of (limit, key) back. The owner hears of it with
// the next Due claim, Settle later.
func (h *Holdings) Release(limit, key string, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[limitKey{limit, key}]; e != nil && e.inUse > 0 {
		e.inUse--
		if e.inUse < e.granted {
			e.shrunk = now.UnixNano()
		}
	}
}

// Due returns the claims to send at now: the count of every (limit, key)
// whose slots were released at least Settle ago, and of every one not sent
// for Renew. Report each answer with Synced.
func (h *Holdings) Due(now time.Time) []Claim {
	ns := now.UnixNano()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Claim
	for k, e := range h.m {
		shrink := e.inUse < e.granted && ns-e.shrunk >= int64(Settle)
		if !shrink && ns-e.sent < int64(Renew) {
			continue
		}
		if e.inUse == 0 && e.granted == 0 {
			delete(h.m, k)
			continue
		}
		h.seq++
		e.sent = ns
		out = append(out, Claim{Limit: k.limit, Key: k.key, N: e.inUse, Seq: h.seq})
	}
	return out
}

// Synced records the owner's answer to a claim from Due. A refusal (the
// count grew meanwhile, past the limit) changes nothing: the growing
// claim's own answer decides.
func (h *Holdings) Synced(c Claim, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[limitKey{c.Limit, c.Key}]; e != nil && ok {
		h.grant(e, c)
		h.forget(c.Limit, c.Key, e)
	}
}

// Resend makes the (limit, key) of an undelivered claim due again at the
// next Due.
func (h *Holdings) Resend(c Claim) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[limitKey{c.Limit, c.Key}]; e != nil {
		e.sent = 0
	}
}

// InUse returns the slots of (limit, key) in use on this node.
func (h *Holdings) InUse(limit, key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[limitKey{limit, key}]; e != nil {
		return e.inUse
	}
	return 0
}

// grant records the count of claim c, unless a newer claim's answer came
// first.
func (h *Holdings) grant(e *holding, c Claim) {
	if c.Seq > e.seen {
		e.granted, e.seen = c.N, c.Seq
	}
}

// forget drops an entry with nothing in use and nothing granted.
func (h *Holdings) forget(limit, key string, e *holding) {
	if e.inUse == 0 && e.granted == 0 {
		delete(h.m, limitKey{limit, key})
	}
}
