package node

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ratelimit"
)

// limitNet is a cluster of limiters without Raft or transport: every key
// hashes to partition 1, whose leader is leader; calls between limiters
// go through JSON like the real ones, and down nodes do not answer. One
// fake clock serves all.
type limitNet struct {
	mu      sync.Mutex
	now     time.Time
	leader  string
	down    map[string]bool
	hints   map[string]string // node -> leader it was told of
	nodes   map[string]*limiter
	calls   int
	ownerOf func(self string) string // who self believes leads; default leader
	// believes, if set, is who self names as leader when it does not lead
	// (default: leader).
	believes func(self string) string
}

func newLimitNet(t testing.TB, cfg ratelimit.Config, names ...string) *limitNet {
	t.Helper()
	ln := &limitNet{now: time.Unix(1_700_000_000, 0), leader: names[0], down: map[string]bool{},
		hints: map[string]string{}, nodes: map[string]*limiter{}}
	for _, name := range names {
		ln.nodes[name] = newLimiterWith(cfg, name+"/1", ln.route(name), ln.clock, slog.New(slog.DiscardHandler))
	}
	return ln
}

func (ln *limitNet) clock() time.Time {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	return ln.now
}

func (ln *limitNet) advance(d time.Duration) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	ln.now = ln.now.Add(d)
}

// id names nodes as replica ids for leader hints: "n1" is 1.
func id(name string) uint64 { return uint64(name[1] - '0') }

func (ln *limitNet) route(self string) limitRoute {
	return limitRoute{
		partitionOf: func(string) uint64 { return 1 },
		owner: func(_ uint64, attempt int) (string, bool) {
			ln.mu.Lock()
			defer ln.mu.Unlock()
			addr := ln.leader
			if h, ok := ln.hints[self]; ok && attempt > 0 {
				addr = h
			} else if ln.ownerOf != nil {
				addr = ln.ownerOf(self)
			}
			return addr, addr == self
		},
		leads: func(uint64) (uint64, bool) {
			ln.mu.Lock()
			defer ln.mu.Unlock()
			if ln.believes != nil && ln.leader != self {
				return id(ln.believes(self)), false
			}
			return id(ln.leader), ln.leader == self
		},
		peers: func(uint64) []string {
			var out []string
			for name := range ln.nodes {
				if name != self {
					out = append(out, name)
				}
			}
			return out
		},
		nodes: func() int { return len(ln.nodes) },
		hint: func(_, leader uint64) {
			ln.mu.Lock()
			defer ln.mu.Unlock()
			ln.hints[self] = "n" + string(rune('0'+leader))
		},
		call: func(_ context.Context, addr string, body []byte) ([]byte, error) {
			ln.mu.Lock()
			ln.calls++
			to, down := ln.nodes[addr], ln.down[addr]
			ln.mu.Unlock()
			if down {
				return nil, errors.New("unreachable")
			}
			var req limitRequest
			if err := json.Unmarshal(body, &req); err != nil {
				return nil, err
			}
			return json.Marshal(to.serve(context.Background(), req))
		},
	}
}

// takeAll sends n Takes of limit for key, spread over nodes in turn, and
// counts those allowed.
func (ln *limitNet) takeAll(t *testing.T, limit, key string, n int, nodes ...string) int {
	t.Helper()
	allowed := 0
	for i := range n {
		err := ln.nodes[nodes[i%len(nodes)]].Take(context.Background(), limit, key)
		switch {
		case err == nil:
			allowed++
		case !errs.Is(err, errs.RateLimited):
			t.Fatalf("take %d: %v", i, err)
		}
	}
	return allowed
}

func TestLimiter_Take(t *testing.T) {
	cfg := ratelimit.Config{Rates: map[string]ratelimit.Rate{
		ratelimit.LoginsPerUser: {N: 8, Per: time.Hour},
		ratelimit.Posts:         {N: 64, Per: time.Hour},
	}}
	t.Run("the limit holds across nodes, whatever the case of the key", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		if got := ln.takeAll(t, ratelimit.LoginsPerUser, "Ann", 12, "n2", "n3", "n1") +
			ln.takeAll(t, ratelimit.LoginsPerUser, "ANN", 12, "n3", "n2"); got != 8 {
			t.Fatalf("%d allowed across three nodes, want 8", got)
		}
		if got := ln.takeAll(t, ratelimit.LoginsPerUser, "bob", 12, "n2"); got != 8 {
			t.Fatalf("another key: %d allowed, want 8", got)
		}
	})
	t.Run("batches never exceed the limit; refusals spare calls", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		got := ln.takeAll(t, ratelimit.Posts, "ann", 1000, "n2", "n3", "n1")
		if got > 64 || got < 64-2*4 {
			t.Fatalf("%d allowed, want 64 less at most the tokens stashed on the two other nodes", got)
		}
		if ln.calls > 64 {
			t.Fatalf("%d calls to the owner for %d allowed", ln.calls, got)
		}
	})
	t.Run("a refusal names the limit and when to retry", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2")
		ln.takeAll(t, ratelimit.LoginsPerUser, "ann", 8, "n2")
		err := ln.nodes["n2"].Take(context.Background(), ratelimit.LoginsPerUser, "ann")
		var ex *ratelimit.Exceeded
		if !errors.As(err, &ex) || ex.Limit != ratelimit.LoginsPerUser || ex.RetryAfter() != 450*time.Second {
			t.Fatalf("refusal %v (%+v), want logins-per-user, retry after 450 s", err, ex)
		}
	})
	t.Run("an unreachable owner: each node limits alone, at its share", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		ln.down["n1"] = true
		for _, n := range []string{"n2", "n3"} {
			if got := ln.takeAll(t, ratelimit.LoginsPerUser, "ann", 20, n); got != 8/3 {
				t.Fatalf("%s alone allowed %d, want its share of 8 over 3 nodes, %d", n, got, 8/3)
			}
		}
	})
	t.Run("a node with a stale leader follows the redirect", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		ln.ownerOf = func(self string) string {
			if self == "n2" {
				return "n3" // n2 believes n3 leads
			}
			return "n1"
		}
		if got := ln.takeAll(t, ratelimit.LoginsPerUser, "ann", 6, "n2") + ln.takeAll(t, ratelimit.LoginsPerUser, "ann", 6, "n3"); got != 8 {
			t.Fatalf("%d allowed, want 8 counted by n1", got)
		}
		if ln.hints["n2"] != "n1" {
			t.Fatalf("n2 was not told that n1 leads: %v", ln.hints)
		}
	})
	t.Run("a redirect back to a node that does not lead is no refusal", func(t *testing.T) {
		// n2 believes n3 leads, n3 names n2: n2 must not answer for
		// itself as if it led (a refusal with no wait), but decide alone.
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		ln.ownerOf = func(self string) string {
			if self == "n2" {
				return "n3"
			}
			return "n1"
		}
		ln.believes = func(self string) string {
			if self == "n3" {
				return "n2"
			}
			return "n3"
		}
		if got := ln.takeAll(t, ratelimit.LoginsPerUser, "ann", 8, "n2"); got != 8/3 {
			t.Fatalf("%d of 8 allowed while leadership was unclear, want n2's share, %d", got, 8/3)
		}
	})
	t.Run("a change of leader carries the count over", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		got := ln.takeAll(t, ratelimit.LoginsPerUser, "ann", 5, "n2", "n3")
		ln.mu.Lock()
		ln.leader = "n3"
		ln.mu.Unlock()
		if got += ln.takeAll(t, ratelimit.LoginsPerUser, "ann", 12, "n3", "n2", "n1"); got != 8 {
			t.Fatalf("%d allowed across a change of leader, want 8", got)
		}
	})
	t.Run("limits that are off never ask anyone", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2")
		if got := ln.takeAll(t, ratelimit.RoomCreates, "ann", 100, "n2"); got != 100 || ln.calls != 0 {
			t.Fatalf("%d allowed with %d calls, want 100 and none", got, ln.calls)
		}
	})
}

func TestLimiter_Hold(t *testing.T) {
	cfg := ratelimit.Config{Slots: map[string]int{ratelimit.Streams: 3}}
	ctx := context.Background()
	hold := func(ln *limitNet, node string) (func(), error) {
		return ln.nodes[node].Hold(ctx, ratelimit.Streams, "ann")
	}
	sync := func(ln *limitNet, nodes ...string) {
		for _, n := range nodes {
			l := ln.nodes[n]
			l.sync(ctx, l.holds.Due(ln.clock()))
		}
	}
	t.Run("the cap holds across nodes; a release frees a slot once it settles", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		r1, err1 := hold(ln, "n1")
		_, err2 := hold(ln, "n2")
		_, err3 := hold(ln, "n3")
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		if _, err := hold(ln, "n2"); !errs.Is(err, errs.RateLimited) {
			t.Fatalf("a fourth stream: %v", err)
		}
		r1()
		r1()
		ln.advance(ratelimit.Settle)
		sync(ln, "n1")
		if _, err := hold(ln, "n3"); err != nil {
			t.Fatalf("after a release settled: %v", err)
		}
		if _, err := hold(ln, "n1"); !errs.Is(err, errs.RateLimited) {
			t.Fatalf("a double release freed two slots: %v", err)
		}
	})
	t.Run("a dead node's slots lapse", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2", "n3")
		for range 3 {
			if _, err := hold(ln, "n3"); err != nil {
				t.Fatal(err)
			}
		}
		ln.down["n3"] = true // n3 dies: it never renews again
		if _, err := hold(ln, "n2"); !errs.Is(err, errs.RateLimited) {
			t.Fatalf("before the lease lapsed: %v", err)
		}
		ln.advance(ratelimit.DefaultLeaseTTL)
		if _, err := hold(ln, "n2"); err != nil {
			t.Fatalf("after the lease lapsed: %v", err)
		}
	})
	t.Run("renewals keep a live node's slots", func(t *testing.T) {
		ln := newLimitNet(t, cfg, "n1", "n2")
		for range 3 {
			if _, err := hold(ln, "n2"); err != nil {
				t.Fatal(err)
			}
		}
		for range 10 {
			ln.advance(ratelimit.Renew)
			sync(ln, "n2")
		}
		if _, err := hold(ln, "n1"); !errs.Is(err, errs.RateLimited) {
			t.Fatalf("a renewed count lapsed: %v", err)
		}
	})
}

// BenchmarkLimiter_Take is one post's limit check on a node: on the owner
// of the user's key, and on another node (tokens taken from the owner in
// batches over a JSON call, as on the wire, without the network).
func BenchmarkLimiter_Take(b *testing.B) {
	for _, tc := range []struct {
		name string
		rate ratelimit.Rate
		node string
	}{
		{"owner", ratelimit.Rate{N: 1 << 30, Per: time.Second}, "n1"},
		{"remote, batches of 16", ratelimit.Rate{N: 1 << 30, Per: time.Second}, "n2"},
		{"remote, batches of 3 (posts' default)", ratelimit.Rate{N: 60, Per: time.Nanosecond}, "n2"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ln := newLimitNet(b, ratelimit.Config{Rates: map[string]ratelimit.Rate{ratelimit.Posts: tc.rate}}, "n1", "n2")
			for _, l := range ln.nodes {
				l.now = time.Now // refills as time passes
			}
			l := ln.nodes[tc.node]
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := l.Take(ctx, ratelimit.Posts, "ann"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(ln.calls)/float64(b.N), "calls/op")
		})
	}
}
