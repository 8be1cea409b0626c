package link_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/parley-chat/parley/internal/clock"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// newClock returns the Service's clock.
func newClock() *statetest.Clock { return statetest.NewClock(time.Unix(1_700_000_000, 0)) }

// spy wraps the in-memory replicator to count reads by kind, to fail chosen
// proposals, and to hide links from stale reads as a lagging replica would.
type spy struct {
	*statetest.Replicator
	staleReads, linReads, proposals atomic.Int64
	mu                              sync.Mutex
	fail                            func(ctx context.Context, p uint64, dedupKey string, cmd []byte) error
	staleEmpty                      bool // stale reads see an empty replica
}

func newSpy(partitions int) *spy {
	return &spy{Replicator: statetest.NewReplicator(partitions, link.StateMachine{})}
}

func (s *spy) Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error) {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		if err := fail(ctx, p, dedupKey, cmd); err != nil {
			return nil, err
		}
	}
	s.proposals.Add(1)
	return s.Replicator.Propose(ctx, p, dedupKey, cmd)
}

func (s *spy) Read(ctx context.Context, p uint64, stale bool, fn func(state.Reader) error) (int64, error) {
	if !stale {
		s.linReads.Add(1)
		return s.Replicator.Read(ctx, p, stale, fn)
	}
	s.staleReads.Add(1)
	s.mu.Lock()
	empty := s.staleEmpty
	s.mu.Unlock()
	if empty {
		return s.Replicator.StaleMs, fn(state.NewMem())
	}
	return s.Replicator.Read(ctx, p, stale, fn)
}

func (s *spy) set(f func(*spy)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func mustService(t testing.TB, r state.Replicator, clk *statetest.Clock, mod func(*link.Config)) *link.Service {
	t.Helper()
	cfg := link.Config{Now: clk.Now}
	if mod != nil {
		mod(&cfg)
	}
	s, err := link.NewService(r, cfg)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	return s
}

func mustCreate(t testing.TB, s *link.Service, user, url, code string) link.Link {
	t.Helper()
	l, err := s.Create(context.Background(), user, url, code, "", link.Options{})
	if err != nil {
		t.Fatalf("Create(%q, %q): %v", url, code, err)
	}
	return l
}

func wantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

// chunks is a Rand that hands out the given 8-byte chunks in turn.
type chunks struct {
	mu   sync.Mutex
	next [][]byte
}

func (c *chunks) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.next) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, c.next[0])
	c.next = c.next[1:]
	return n, nil
}

func TestService_Create(t *testing.T) {
	ctx := context.Background()
	r := newSpy(4)
	s := mustService(t, r, newClock(), nil)
	t.Run("custom code", func(t *testing.T) {
		l := mustCreate(t, s, "alice", "https://example.com/a", "my-link")
		if l.Code != "my-link" || l.URL != "https://example.com/a" || l.CreatedBy != "alice" || l.CreatedAt.IsZero() || l.Hits != 0 {
			t.Fatalf("Create = %+v", l)
		}
		_, err := s.Create(ctx, "bob", "https://example.com/b", "my-link", "", link.Options{})
		wantCode(t, err, errs.Conflict)
		info, err := s.Info(ctx, "my-link")
		if err != nil || !reflect.DeepEqual(info, l) {
			t.Fatalf("Info = (%+v, %v), want %+v", info, err, l)
		}
	})
	t.Run("generated code", func(t *testing.T) {
		l := mustCreate(t, s, "alice", "https://example.com/g", "")
		if len(l.Code) != link.GeneratedCode || link.CheckCode(l.Code) != nil {
			t.Fatalf("generated code %q", l.Code)
		}
	})
	t.Run("validation", func(t *testing.T) {
		proposals := r.proposals.Load()
		cases := []struct {
			user, url, code, idem string
			want                  errs.Code
			word                  string
		}{
			{"alice", "javascript:alert(1)", "", "", errs.Invalid, "url"},
			{"alice", "https://x/" + strings.Repeat("a", 2048), "", "", errs.TooLarge, "url"},
			{"alice", "https://x", "bad code", "", errs.Invalid, "code"},
			{"alice", "https://x", strings.Repeat("c", 65), "", errs.Invalid, "code"},
			{"alice", "https://x", "", strings.Repeat("i", 257), errs.Invalid, "idempotency key"},
			{"", "https://x", "", "", errs.Unauthorized, "sign in"},
		}
		for _, tc := range cases {
			_, err := s.Create(ctx, tc.user, tc.url, tc.code, tc.idem, link.Options{})
			wantCode(t, err, tc.want)
			if !strings.Contains(err.Error(), tc.word) {
				t.Fatalf("error %q does not name %q", err, tc.word)
			}
		}
		if r.proposals.Load() != proposals {
			t.Fatal("an invalid create was proposed")
		}
	})
}

// TestService_CreateCollision feeds the generator codes that are taken: it
// tries again, up to CodeAttempts codes.
func TestService_CreateCollision(t *testing.T) {
	ctx := context.Background()
	r := newSpy(4)
	a, b := bytes.Repeat([]byte{1}, 8), bytes.Repeat([]byte{2}, 8)
	rnd := &chunks{next: [][]byte{a, a, a, b}}
	s := mustService(t, r, newClock(), func(c *link.Config) { c.Rand = rnd; c.CodeAttempts = 3 })
	first := mustCreate(t, s, "alice", "https://example.com/1", "")
	second := mustCreate(t, s, "alice", "https://example.com/2", "") // a twice, then b
	if first.Code == second.Code {
		t.Fatalf("both links got code %q", first.Code)
	}
	rnd.next = [][]byte{a, b, a}
	_, err := s.Create(ctx, "alice", "https://example.com/3", "", "", link.Options{})
	wantCode(t, err, errs.Conflict)
	if !strings.Contains(err.Error(), "no free code found (tried 3)") {
		t.Fatalf("error %q", err)
	}
}

func TestService_CreateIdempotency(t *testing.T) {
	ctx := context.Background()
	r := newSpy(4)
	s := mustService(t, r, newClock(), nil)
	first, err := s.Create(ctx, "alice", "https://example.com/x", "", "req-1", link.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The retry comes through another node.
	other := mustService(t, r, newClock(), nil)
	again, err := other.Create(ctx, "alice", "https://example.com/x", "", "req-1", link.Options{})
	if err != nil || !reflect.DeepEqual(again, first) {
		t.Fatalf("retry = (%+v, %v), want %+v", again, err, first)
	}
	bob, err := s.Create(ctx, "bob", "https://example.com/x", "", "req-1", link.Options{})
	if err != nil || bob.Code == first.Code {
		t.Fatalf("another user's create = (%+v, %v)", bob, err)
	}
	mine, _ := s.Mine(ctx, "alice", link.Filter{})
	if len(mine) != 1 {
		t.Fatalf("alice has %d links, want 1", len(mine))
	}
	// A custom code with a key: the retry returns the first result, not 409.
	c1, err := s.Create(ctx, "alice", "https://example.com/y", "custom", "req-2", link.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := s.Create(ctx, "alice", "https://example.com/y", "custom", "req-2", link.Options{}); err != nil || !reflect.DeepEqual(c2, c1) {
		t.Fatalf("custom retry = (%+v, %v)", c2, err)
	}
}

func TestService_Delete(t *testing.T) {
	ctx := context.Background()
	s := mustService(t, newSpy(4), newClock(), nil)
	mustCreate(t, s, "Alice", "https://example.com/1", "one")
	mustCreate(t, s, "alice", "https://example.com/2", "two")
	cases := []struct {
		name, user string
		admin      bool
		code       string
		want       errs.Code
	}{
		{"stranger", "bob", false, "one", errs.Forbidden},
		{"owner in another case", "ALICE", false, "one", ""},
		{"already gone", "alice", false, "one", errs.NotFound},
		{"admin", "root", true, "two", ""},
		{"missing", "root", true, "nope", errs.NotFound},
		{"malformed code", "root", true, "a/b", errs.NotFound},
		{"anonymous", "", true, "two", errs.Unauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, s.Delete(ctx, tc.user, tc.admin, tc.code), tc.want)
		})
	}
	_, err := s.Info(ctx, "one")
	wantCode(t, err, errs.NotFound)
}

func TestService_Mine(t *testing.T) {
	ctx := context.Background()
	s := mustService(t, newSpy(8), newClock(), nil)
	var want []string
	for i := range 30 {
		code := fmt.Sprintf("c%02d", i)
		mustCreate(t, s, "alice", "https://example.com/"+code, code)
		want = append([]string{code}, want...) // newest first
		mustCreate(t, s, "bob", "https://example.com/b"+code, "b"+code)
	}
	if err := s.Delete(ctx, "alice", false, "c07"); err != nil {
		t.Fatal(err)
	}
	want = removeString(want, "c07")
	links, err := s.Mine(ctx, "Alice", link.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range links {
		got = append(got, l.Code)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Mine = %v, want %v", got, want)
	}
	capped := mustService(t, newSpy(8), newClock(), func(c *link.Config) { c.MaxMine = 5 })
	for i := range 12 {
		mustCreate(t, capped, "carol", "https://example.com", fmt.Sprint("k", i))
	}
	if links, _ := capped.Mine(ctx, "carol", link.Filter{}); len(links) != 5 || links[0].Code != "k11" {
		t.Fatalf("capped Mine = %+v", links)
	}
	_, err = s.Mine(ctx, "", link.Filter{})
	wantCode(t, err, errs.Unauthorized)
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// TestService_ResolveStaleness deletes a link through one node while another
// has it cached: that node keeps redirecting only until its cache entry,
// CacheTTL old, expires.
func TestService_ResolveStaleness(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(4)
	node1 := mustService(t, r, clk, nil)
	node2 := mustService(t, r, clk, nil)
	mustCreate(t, node1, "alice", "https://example.com/x", "x")
	if url, err := node2.Resolve(ctx, "x", link.Visit{}); err != nil || url.URL != "https://example.com/x" {
		t.Fatalf("Resolve = (%+v, %v)", url, err)
	}
	clk.Advance(500 * time.Millisecond)
	if err := node1.Delete(ctx, "alice", false, "x"); err != nil {
		t.Fatal(err)
	}
	_, err := node1.Resolve(ctx, "x", link.Visit{})
	wantCode(t, err, errs.NotFound) // at once on the deleting node

	clk.Advance(link.DefaultCacheTTL - 500*time.Millisecond - time.Millisecond)
	if _, err := node2.Resolve(ctx, "x", link.Visit{}); err != nil {
		t.Fatalf("cached redirect gone before its TTL: %v", err)
	}
	clk.Advance(time.Millisecond)
	_, err = node2.Resolve(ctx, "x", link.Visit{})
	wantCode(t, err, errs.NotFound)
}

// TestService_ResolveReads checks the read path: the cache first, then a
// stale local read, then a linearizable read when the replica lacks the code
// or is too stale; staleness shortens the cache entry's life.
func TestService_ResolveReads(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(4)
	s := mustService(t, r, clk, nil)
	mustCreate(t, s, "alice", "https://example.com/a", "a")
	mustCreate(t, s, "alice", "https://example.com/b", "b")
	mustCreate(t, s, "alice", "https://example.com/c", "c")
	reads := func() (int64, int64) { return r.staleReads.Load(), r.linReads.Load() }
	step := func(code string, wantStale, wantLin int64) {
		t.Helper()
		s0, l0 := reads()
		if _, err := s.Resolve(ctx, code, link.Visit{}); err != nil {
			t.Fatalf("Resolve(%q): %v", code, err)
		}
		if s1, l1 := reads(); s1-s0 != wantStale || l1-l0 != wantLin {
			t.Fatalf("Resolve(%q) read stale %d, linearizable %d; want %d, %d", code, s1-s0, l1-l0, wantStale, wantLin)
		}
	}
	step("a", 1, 0) // the local replica has it
	step("a", 0, 0) // cached

	r.set(func(r *spy) { r.staleEmpty = true }) // a replica that has not caught up
	step("b", 1, 1)
	r.set(func(r *spy) { r.staleEmpty = false; r.StaleMs = 1500 }) // too far behind
	step("c", 1, 1)

	r.set(func(r *spy) { r.StaleMs = 800 })
	if err := s.Delete(ctx, "alice", false, "a"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, "alice", "https://example.com/a2", "a")
	step("a", 1, 0)
	clk.Advance(link.DefaultCacheTTL - 800*time.Millisecond) // the entry lives TTL minus the staleness
	step("a", 1, 0)

	s0, l0 := reads()
	_, err := s.Resolve(ctx, "missing", link.Visit{})
	wantCode(t, err, errs.NotFound)
	_, err = s.Resolve(ctx, "missing", link.Visit{})
	wantCode(t, err, errs.NotFound)
	if s1, l1 := reads(); s1-s0 != 2 || l1-l0 != 2 {
		t.Fatal("unknown codes were cached")
	}
	_, err = s.Resolve(ctx, "bad/code", link.Visit{})
	wantCode(t, err, errs.NotFound)

	if st := s.CacheStats(); st.Hits != 1 || st.Len != 3 {
		t.Fatalf("cache stats %+v", st)
	}
}

func TestService_Flush(t *testing.T) {
	ctx := context.Background()
	r := newSpy(4)
	s := mustService(t, r, newClock(), func(c *link.Config) { c.MaxHitsPerCommand = 2 })
	codes := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, c := range codes {
		mustCreate(t, s, "alice", "https://example.com/"+c, c)
	}
	for i, c := range codes {
		for range i + 1 {
			if _, err := s.Resolve(ctx, c, link.Visit{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Hits are in memory only until the flush.
	if l, _ := s.Info(ctx, "h"); l.Hits != 0 {
		t.Fatalf("hits before flush = %d", l.Hits)
	}
	proposals := r.proposals.Load()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range codes {
		if l, _ := s.Info(ctx, c); l.Hits != uint64(i+1) {
			t.Fatalf("hits of %q = %d, want %d", c, l.Hits, i+1)
		}
	}
	// 8 codes over at most 4 partitions, 2 codes per command: 4 to 8 commands.
	if n := r.proposals.Load() - proposals; n < 4 || n > 8 {
		t.Fatalf("flush proposed %d commands", n)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := r.proposals.Load() - proposals; n > 8 {
		t.Fatal("an empty flush proposed")
	}
	links, _ := s.Mine(ctx, "alice", link.Filter{})
	if links[0].Code != "h" || links[0].Hits != 8 {
		t.Fatalf("Mine shows %+v", links[0])
	}
}

// TestService_FlushRetry fails flushes in the two ways a proposal can fail:
// before reaching the log, and after being applied with the answer lost. The
// next Flush retries the failed commands with their dedup keys, so every
// redirect counts exactly once either way.
func TestService_FlushRetry(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprint("applied=", applied), func(t *testing.T) {
			ctx := context.Background()
			r := newSpy(1)
			s := mustService(t, r, newClock(), nil)
			mustCreate(t, s, "alice", "https://example.com", "x")
			resolve := func(n int) {
				t.Helper()
				for range n {
					if _, err := s.Resolve(ctx, "x", link.Visit{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			resolve(3)
			r.set(func(sp *spy) {
				sp.fail = func(ctx context.Context, p uint64, dedupKey string, cmd []byte) error {
					if cmd[1] != 'V' {
						return nil
					}
					if applied {
						if _, err := sp.Replicator.Propose(ctx, p, dedupKey, cmd); err != nil {
							return err
						}
						return errs.New(errs.Timeout, "answer lost")
					}
					return errs.New(errs.Unavailable, "no leader")
				}
			})
			if err := s.Flush(ctx); err == nil {
				t.Fatal("the failing flush succeeded")
			}
			r.set(func(sp *spy) { sp.fail = nil })
			resolve(1)
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if l, _ := s.Info(ctx, "x"); l.Hits != 4 {
				t.Fatalf("hits = %d, want 4", l.Hits)
			}
			if err := s.Flush(ctx); err != nil { // nothing left to retry
				t.Fatal(err)
			}
			if l, _ := s.Info(ctx, "x"); l.Hits != 4 {
				t.Fatalf("hits after an empty flush = %d, want 4", l.Hits)
			}
		})
	}
}

// TestService_FlushRetention drops the oldest failed commands past
// FlushRetention and says so.
func TestService_FlushRetention(t *testing.T) {
	ctx := context.Background()
	r := newSpy(1)
	s := mustService(t, r, newClock(), func(c *link.Config) { c.FlushRetention = 2 })
	mustCreate(t, s, "alice", "https://example.com", "x")
	r.set(func(sp *spy) {
		sp.fail = func(context.Context, uint64, string, []byte) error { return errs.New(errs.Unavailable, "down") }
	})
	var err error
	for range 3 {
		if _, err := s.Resolve(ctx, "x", link.Visit{}); err != nil {
			t.Fatal(err)
		}
		err = s.Flush(ctx)
	}
	if err == nil || !strings.Contains(err.Error(), "dropped the visit counts of 1") {
		t.Fatalf("third failed flush: %v", err)
	}
	r.set(func(sp *spy) { sp.fail = nil })
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Info(ctx, "x"); l.Hits != 2 {
		t.Fatalf("hits = %d, want the 2 retained", l.Hits)
	}
}

func TestService_RunFlusher(t *testing.T) {
	r := newSpy(2)
	s := mustService(t, r, newClock(), nil)
	mustCreate(t, s, "alice", "https://example.com", "x")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunFlusher(ctx, 5*time.Millisecond)
	}()
	if _, err := s.Resolve(context.Background(), "x", link.Visit{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if l, _ := s.Info(context.Background(), "x"); l.Hits == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the flusher did not flush")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := s.Resolve(context.Background(), "x", link.Visit{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	// A tick or the final flush on the way out wrote the last hit.
	if l, _ := s.Info(context.Background(), "x"); l.Hits != 2 {
		t.Fatalf("hits after stop = %d, want 2", l.Hits)
	}
}

func TestConfig_Validate(t *testing.T) {
	cases := []struct {
		name string
		cfg  link.Config
		ok   bool
	}{
		{"zero", link.Config{}, true},
		{"lfu", link.Config{CachePolicy: link.LFU}, true},
		{"bad policy", link.Config{CachePolicy: "mru"}, false},
		{"ttl over 2s", link.Config{CacheTTL: 3 * time.Second}, false},
		{"stale not below ttl", link.Config{CacheTTL: time.Second, MaxStale: time.Second}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
	if d := link.DefaultConfig(); d.CacheTTL != 2*time.Second || d.CachePolicy != link.LRU || d.MaxURL != 2048 {
		t.Fatalf("DefaultConfig() = %+v", d)
	}
}

// BenchmarkService_Resolve measures redirects answered from the cache, with
// hit counting, for each policy.
func BenchmarkService_Resolve(b *testing.B) {
	for _, p := range []link.Policy{link.LRU, link.LFU, link.FIFO} {
		b.Run(string(p), func(b *testing.B) {
			ctx := context.Background()
			s := mustService(b, newSpy(16), newClock(), func(c *link.Config) {
				c.CachePolicy = p
				c.Now = clock.New(nil).Now // a node's clock, as every redirect reads it
			})
			codes := make([]string, 1000)
			for i := range codes {
				codes[i] = fmt.Sprintf("code%d", i)
				mustCreate(b, s, "alice", "https://example.com/"+codes[i], codes[i])
				if _, err := s.Resolve(ctx, codes[i], link.Visit{}); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := s.Resolve(ctx, codes[i%len(codes)], link.Visit{}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						if _, err := s.Resolve(ctx, codes[i%len(codes)], link.Visit{}); err != nil {
							b.Error(err)
							return
						}
						i++
					}
				})
			})
			b.Run("parallel-one-link", func(b *testing.B) { // a link every visitor asks for
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := s.Resolve(ctx, codes[0], link.Visit{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// TestService_ResolveKeepsNoRequestMemory: Resolve may be handed strings
// that point into a request's buffer, which the next request overwrites
// (the links listener does): the code a miss caches, the referrer host and
// the user agent it counts are its own copies, so the link is still found
// in the cache and counted under the right names after the buffer changed.
func TestService_ResolveKeepsNoRequestMemory(t *testing.T) {
	s := mustService(t, statetest.NewReplicator(4, link.StateMachine{}), newClock(), nil)
	mustCreate(t, s, "alice", "https://example.com/a", "alpha")
	ctx := context.Background()
	const ua, ref = "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", "https://news.example.org/x"
	buf := []byte("alpha " + ua + " " + ref)
	view := func(i, n int) string { return unsafe.String(&buf[i], n) }
	v := link.Visit{UserAgent: view(6, len(ua)), Referer: view(7+len(ua), len(ref))}
	if _, err := s.Resolve(ctx, view(0, 5), v); err != nil { // a miss: the link is cached
		t.Fatal(err)
	}
	for i := range buf { // the next request
		buf[i] = 'z'
	}
	before := s.CacheStats()
	to, err := s.Resolve(ctx, "alpha", link.Visit{UserAgent: ua, Referer: ref})
	if err != nil || to.URL != "https://example.com/a" {
		t.Fatalf("Resolve(alpha) = %+v, %v", to, err)
	}
	if after := s.CacheStats(); after.Hits != before.Hits+1 || after.Misses != before.Misses {
		t.Errorf("alpha, cached, missed the cache after the buffer changed: %+v then %+v", before, after)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx, "alice", false, "alpha", 1)
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits != 2 || len(st.Referrers) != 1 || st.Referrers[0].Name != "news.example.org" || st.Referrers[0].N != 2 ||
		len(st.Browsers) != 1 || st.Browsers[0].N != 2 {
		t.Errorf("alpha's stats = %+v, want two visits from news.example.org in one browser", st)
	}
}
