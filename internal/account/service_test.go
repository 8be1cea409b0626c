package account_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// newClock returns the Service's clock. It starts at the Unix epoch, like
// the in-memory replicator's leader time, so sessions expire on the same
// time line.
func newClock() *statetest.Clock { return statetest.NewClock(time.UnixMilli(0)) }

// spy wraps the in-memory replicator to count reads and proposals and to fail
// chosen proposals.
type spy struct {
	*statetest.Replicator
	reads, proposals atomic.Int64
	mu               sync.Mutex
	fail             func(cmd []byte) error
}

func (s *spy) Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error) {
	s.mu.Lock()
	fail := s.fail
	s.mu.Unlock()
	if fail != nil {
		if err := fail(cmd); err != nil {
			return nil, err
		}
	}
	s.proposals.Add(1)
	return s.Replicator.Propose(ctx, p, dedupKey, cmd)
}

func (s *spy) Read(ctx context.Context, p uint64, stale bool, fn func(state.Reader) error) (int64, error) {
	s.reads.Add(1)
	return s.Replicator.Read(ctx, p, stale, fn)
}

func (s *spy) setFail(f func(cmd []byte) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = f
}

func newSpy(partitions int) *spy {
	return &spy{Replicator: statetest.NewReplicator(partitions, account.StateMachine{})}
}

func mustService(t testing.TB, r state.Replicator, clk *statetest.Clock, mod func(*account.Config)) *account.Service {
	t.Helper()
	cfg := account.Config{Hasher: passwordtest.Hasher(), Now: clk.Now}
	if mod != nil {
		mod(&cfg)
	}
	s, err := account.NewService(r, cfg)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	return s
}

func mustRegister(t testing.TB, s *account.Service, name string) account.User {
	t.Helper()
	u, err := s.Register(context.Background(), account.RegisterRequest{Username: name, Password: "password-" + name})
	if err != nil {
		t.Fatalf("Register(%q): %v", name, err)
	}
	return u
}

func mustLogin(t testing.TB, s *account.Service, name string) account.Session {
	t.Helper()
	sess, err := s.Login(context.Background(), name, "password-"+name, "")
	if err != nil {
		t.Fatalf("Login(%q): %v", name, err)
	}
	return sess
}

func wantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func TestService_Register(t *testing.T) {
	ctx := context.Background()
	s := mustService(t, newSpy(8), newClock(), nil)
	alice := mustRegister(t, s, "Alice")
	if !alice.Admin || alice.Username != "Alice" || alice.CreatedAt.IsZero() {
		t.Fatalf("first user = %+v, want admin Alice", alice)
	}
	if bob := mustRegister(t, s, "bob"); bob.Admin {
		t.Fatalf("second user %+v is admin", bob)
	}
	for _, name := range []string{"Alice", "alice", "ALICE"} {
		_, err := s.Register(ctx, account.RegisterRequest{Username: name, Password: "whatever1"})
		wantCode(t, err, errs.Conflict)
	}
	u, err := s.Lookup(ctx, "aLiCe")
	if err != nil || u.Username != "Alice" || !u.Admin {
		t.Fatalf("Lookup = (%+v, %v)", u, err)
	}
	_, err = s.Lookup(ctx, "carol")
	wantCode(t, err, errs.NotFound)
}

func TestService_Validation(t *testing.T) {
	ctx := context.Background()
	r := newSpy(2)
	s := mustService(t, r, newClock(), nil)
	reg := func(name, pw, idem string) func() error {
		return func() error {
			_, err := s.Register(ctx, account.RegisterRequest{Username: name, Password: pw, IdempotencyKey: idem})
			return err
		}
	}
	cases := []struct {
		name string
		call func() error
		word string // the field the message must name
	}{
		{"empty username", reg("", "password1", ""), "username"},
		{"long username", reg(strings.Repeat("u", 33), "password1", ""), "username"},
		{"username with space", reg("a b", "password1", ""), "username"},
		{"username with slash", reg("a/b", "password1", ""), "username"},
		{"username non-ascii", reg("zoë", "password1", ""), "username"},
		{"short password", reg("alice", "1234567", ""), "password"},
		{"long password", reg("alice", strings.Repeat("p", 257), ""), "password"},
		{"long idempotency key", reg("alice", "password1", strings.Repeat("i", 257)), "idempotency key"},
		{"lookup bad name", func() error { _, err := s.Lookup(ctx, "a b"); return err }, "username"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			wantCode(t, err, errs.Invalid)
			if !strings.Contains(err.Error(), tc.word) {
				t.Fatalf("error %q does not name %q", err, tc.word)
			}
		})
	}
	if n := r.proposals.Load(); n != 0 {
		t.Fatalf("%d invalid calls were proposed", n)
	}
	// The limits themselves are accepted.
	if _, err := s.Register(ctx, account.RegisterRequest{Username: strings.Repeat("u", 32), Password: "12345678"}); err != nil {
		t.Fatalf("32-byte name, 8-byte password: %v", err)
	}
	if _, err := s.Register(ctx, account.RegisterRequest{Username: "a.b-c_D9", Password: strings.Repeat("p", 256)}); err != nil {
		t.Fatalf("256-byte password: %v", err)
	}
}

func TestService_RegisterClosed(t *testing.T) {
	ctx := context.Background()
	s := mustService(t, newSpy(4), newClock(), func(c *account.Config) { c.Registration = account.RegistrationClosed })
	if root := mustRegister(t, s, "root"); !root.Admin {
		t.Fatal("the first user of a closed cluster is not admin")
	}
	_, err := s.Register(ctx, account.RegisterRequest{Username: "bob", Password: "password1"})
	wantCode(t, err, errs.Forbidden)
	bob, err := s.Register(ctx, account.RegisterRequest{Username: "bob", Password: "password1", ByAdmin: true})
	if err != nil || bob.Admin {
		t.Fatalf("admin-created bob = (%+v, %v)", bob, err)
	}
}

// TestService_AdminClaimThenCrash kills the registration between the admin
// claim and the user's creation: the seat waits for its name, nobody else
// becomes admin, and registering the name again completes the bootstrap.
func TestService_AdminClaimThenCrash(t *testing.T) {
	for _, mode := range []account.RegistrationMode{account.RegistrationOpen, account.RegistrationClosed} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			r := newSpy(4)
			s := mustService(t, r, newClock(), func(c *account.Config) { c.Registration = mode })
			r.setFail(func(cmd []byte) error {
				if cmd[1] == 'U' {
					return errs.New(errs.Unavailable, "node died")
				}
				return nil
			})
			_, err := s.Register(ctx, account.RegisterRequest{Username: "Alice", Password: "password1"})
			wantCode(t, err, errs.Unavailable)
			r.setFail(nil)
			_, err = s.Lookup(ctx, "alice")
			wantCode(t, err, errs.NotFound)

			bob, err := s.Register(ctx, account.RegisterRequest{Username: "bob", Password: "password1"})
			if mode == account.RegistrationClosed {
				wantCode(t, err, errs.Forbidden)
			} else if err != nil || bob.Admin {
				t.Fatalf("bob = (%+v, %v), want a plain user", bob, err)
			}
			alice, err := s.Register(ctx, account.RegisterRequest{Username: "ALICE", Password: "password2"})
			if err != nil || !alice.Admin {
				t.Fatalf("retried alice = (%+v, %v), want admin", alice, err)
			}
		})
	}
}

// TestService_ConcurrentFirstRegistrations races many first registrations:
// exactly one user becomes admin, and of racing registrations of one name
// exactly one succeeds.
func TestService_ConcurrentFirstRegistrations(t *testing.T) {
	ctx := context.Background()
	s := mustService(t, newSpy(8), newClock(), nil)
	var wg sync.WaitGroup
	var admins, created, conflicts atomic.Int32
	for i := range 16 {
		name := fmt.Sprintf("user%d", i%8) // two registrations per name
		if i >= 8 {
			name = strings.ToUpper(name)
		}
		wg.Go(func() {
			u, err := s.Register(ctx, account.RegisterRequest{Username: name, Password: "password1"})
			switch {
			case err == nil:
				created.Add(1)
				if u.Admin {
					admins.Add(1)
				}
			case errs.Is(err, errs.Conflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if admins.Load() != 1 || created.Load() != 8 || conflicts.Load() != 8 {
		t.Fatalf("admins %d, created %d, conflicts %d; want 1, 8, 8", admins.Load(), created.Load(), conflicts.Load())
	}
}

func TestService_RegisterIdempotency(t *testing.T) {
	ctx := context.Background()
	s := mustService(t, newSpy(2), newClock(), nil)
	req := account.RegisterRequest{Username: "Alice", Password: "password1", IdempotencyKey: "req-1"}
	first, err := s.Register(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Register(ctx, req)
	if err != nil || again != first {
		t.Fatalf("retry = (%+v, %v), want the first result %+v", again, err, first)
	}
	req.IdempotencyKey = "req-2"
	_, err = s.Register(ctx, req)
	wantCode(t, err, errs.Conflict)
}

func TestService_LoginAuthenticate(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := mustService(t, newSpy(4), clk, nil)
	mustRegister(t, s, "Alice")
	mustRegister(t, s, "bob")

	t.Run("refusals look alike", func(t *testing.T) {
		for _, tc := range []struct{ user, pw string }{
			{"Alice", "wrong-password"}, {"nobody", "password-nobody"}, {"bad name", "x"}, {"Alice", strings.Repeat("x", 300)},
		} {
			_, err := s.Login(ctx, tc.user, tc.pw, "")
			wantCode(t, err, errs.Unauthorized)
			if !strings.Contains(err.Error(), "invalid username or password") {
				t.Fatalf("Login(%q) error %q", tc.user, err)
			}
		}
	})
	t.Run("any case logs in", func(t *testing.T) {
		sess, err := s.Login(ctx, "ALICE", "password-Alice", "")
		if err != nil {
			t.Fatal(err)
		}
		if sess.Username != "Alice" || !strings.HasPrefix(sess.Token, "alice.") || len(sess.Token) < len("alice.")+22 {
			t.Fatalf("session = %+v", sess)
		}
		if want := clk.Now().Add(account.DefaultSessionTTL); sess.ExpiresAt.Sub(want).Abs() > time.Second {
			t.Fatalf("expires at %v, want about %v", sess.ExpiresAt, want)
		}
		user, admin, err := s.Authenticate(ctx, sess.Token)
		if err != nil || user != "Alice" || !admin {
			t.Fatalf("Authenticate = (%q, %v, %v)", user, admin, err)
		}
	})
	t.Run("plain user", func(t *testing.T) {
		sess := mustLogin(t, s, "bob")
		user, admin, err := s.Authenticate(ctx, sess.Token)
		if err != nil || user != "bob" || admin {
			t.Fatalf("Authenticate = (%q, %v, %v)", user, admin, err)
		}
	})
	t.Run("bad tokens", func(t *testing.T) {
		good := mustLogin(t, s, "bob").Token
		forged := "alice" + good[strings.IndexByte(good, '.'):] // bob's random part under alice's name
		for _, tok := range []string{"", "bob", "bob.", "bob.short", good + "x", forged, strings.ToUpper(good[:3]) + good[3:]} {
			_, _, err := s.Authenticate(ctx, tok)
			wantCode(t, err, errs.Unauthorized)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		sess := mustLogin(t, s, "bob")
		clk.Advance(account.DefaultSessionTTL + time.Second)
		_, _, err := s.Authenticate(ctx, sess.Token)
		wantCode(t, err, errs.Unauthorized)
	})
}

// TestService_Session checks that Session tells when the session ends and
// how long it has left by the Service's clock, the count-down a stream's
// expiry timer starts from.
func TestService_Session(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := mustService(t, newSpy(2), clk, func(c *account.Config) { c.SessionTTL = time.Hour })
	mustRegister(t, s, "bob")
	sess := mustLogin(t, s, "bob")
	clk.Advance(10 * time.Minute)
	info, err := s.Session(ctx, sess.Token)
	if err != nil || info.Username != "bob" || !info.Admin { // the first user is admin
		t.Fatalf("Session = (%+v, %v)", info, err)
	}
	if !info.ExpiresAt.Equal(sess.ExpiresAt) {
		t.Fatalf("expires at %v, want the login's %v", info.ExpiresAt, sess.ExpiresAt)
	}
	if want := sess.ExpiresAt.Sub(clk.Now()); info.Left != want {
		t.Fatalf("left %v, want %v", info.Left, want)
	}
	clk.Advance(time.Hour)
	_, err = s.Session(ctx, sess.Token)
	wantCode(t, err, errs.Unauthorized)
}

// TestService_Revocation logs out through one node and authenticates through
// another that has the token cached: it stops working there within CacheTTL.
func TestService_Revocation(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(4)
	node1 := mustService(t, r, clk, nil)
	node2 := mustService(t, r, clk, nil)
	mustRegister(t, node1, "alice")
	sess := mustLogin(t, node1, "alice")
	if _, _, err := node2.Authenticate(ctx, sess.Token); err != nil {
		t.Fatal(err)
	}
	if err := node1.Logout(ctx, sess.Token); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	_, _, err := node1.Authenticate(ctx, sess.Token)
	wantCode(t, err, errs.Unauthorized) // at once where it was revoked

	clk.Advance(account.DefaultCacheTTL - time.Millisecond)
	if _, _, err := node2.Authenticate(ctx, sess.Token); err != nil {
		t.Fatalf("cached answer gone before its TTL: %v", err)
	}
	clk.Advance(time.Millisecond)
	_, _, err = node2.Authenticate(ctx, sess.Token)
	wantCode(t, err, errs.Unauthorized)

	wantCode(t, node1.Logout(ctx, sess.Token), errs.Unauthorized)
	wantCode(t, node1.Logout(ctx, "garbage"), errs.Unauthorized)
}

func TestService_AuthenticateCache(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(4)
	s := mustService(t, r, clk, nil)
	mustRegister(t, s, "alice")
	tok := mustLogin(t, s, "alice").Token
	other := mustService(t, r, clk, nil) // a node that has not seen the login

	reads := r.reads.Load()
	for range 3 {
		if _, _, err := other.Authenticate(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.reads.Load() - reads; n != 1 {
		t.Fatalf("3 authentications read %d times, want 1", n)
	}
	if hits, misses := other.CacheStats(); hits != 2 || misses != 1 {
		t.Fatalf("cache stats = %d hits, %d misses; want 2, 1", hits, misses)
	}
	clk.Advance(account.DefaultCacheTTL)
	if _, _, err := other.Authenticate(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if n := r.reads.Load() - reads; n != 2 {
		t.Fatalf("read %d times after the TTL, want 2", n)
	}

	t.Run("unknown tokens are cached", func(t *testing.T) {
		unknown := "alice." + strings.Repeat("A", 32)
		reads := r.reads.Load()
		for range 3 {
			_, _, err := other.Authenticate(ctx, unknown)
			wantCode(t, err, errs.Unauthorized)
		}
		if n := r.reads.Load() - reads; n != 1 {
			t.Fatalf("read %d times, want 1", n)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		nocache := mustService(t, r, clk, func(c *account.Config) { c.CacheTTL = -1 })
		reads := r.reads.Load()
		for range 3 {
			if _, _, err := nocache.Authenticate(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
		if n := r.reads.Load() - reads; n != 3 {
			t.Fatalf("read %d times, want 3", n)
		}
	})
}

func TestService_RateLimit(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	limiter := ratelimit.NewLocal(ratelimit.Config{Rates: map[string]ratelimit.Rate{
		ratelimit.LoginsPerAddress: {N: 3, Per: 90 * time.Second},
		ratelimit.LoginsPerUser:    {N: 2, Per: time.Minute},
	}}, clk.Now)
	s := mustService(t, newSpy(2), clk, func(c *account.Config) { c.Limiter = limiter })
	t.Run("per address", func(t *testing.T) {
		mustRegister(t, s, "alice") // from address ""
		if _, err := s.Login(ctx, "alice", "password-alice", "10.0.0.1"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Login(ctx, "nobody", "nope-nope", "10.0.0.1"); !errs.Is(err, errs.Unauthorized) {
			t.Fatalf("second attempt: %v", err)
		}
		if _, err := s.Login(ctx, "not a name", "nope-nope", "10.0.0.1"); !errs.Is(err, errs.Unauthorized) {
			t.Fatalf("third attempt: %v", err)
		}
		_, err := s.Register(ctx, account.RegisterRequest{Username: "bob", Password: "password1", ClientAddr: "10.0.0.1"})
		wantCode(t, err, errs.RateLimited)
		clk.Advance(30 * time.Second) // one attempt back
		if _, err := s.Register(ctx, account.RegisterRequest{Username: "bob", Password: "password1", ClientAddr: "10.0.0.1"}); err != nil {
			t.Fatalf("after 30 s: %v", err)
		}
	})
	t.Run("per account, from any address", func(t *testing.T) {
		clk.Advance(time.Hour)
		if _, err := s.Login(ctx, "Bob", "nope-nope", "10.0.0.2"); !errs.Is(err, errs.Unauthorized) {
			t.Fatal(err)
		}
		if _, err := s.Login(ctx, "bob", "password1", "10.0.0.3"); err != nil {
			t.Fatal(err)
		}
		_, err := s.Login(ctx, "BOB", "password1", "10.0.0.4")
		wantCode(t, err, errs.RateLimited)
		if _, err := s.Login(ctx, "alice", "password-alice", "10.0.0.4"); err != nil {
			t.Fatalf("another account: %v", err)
		}
	})
}

func TestConfig_Validate(t *testing.T) {
	cases := []struct {
		name string
		cfg  account.Config
		ok   bool
	}{
		{"zero", account.Config{}, true},
		{"closed", account.Config{Registration: account.RegistrationClosed}, true},
		{"bad mode", account.Config{Registration: "invite"}, false},
		{"cache ttl 1s", account.Config{CacheTTL: time.Second}, true},
		{"cache ttl over 1s", account.Config{CacheTTL: 2 * time.Second}, false},
		{"passwords inverted", account.Config{MinPassword: 10, MaxPassword: 9}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
	if d := account.DefaultConfig(); d.Hasher != nil || d.CacheTTL != 500*time.Millisecond {
		t.Fatalf("DefaultConfig() = %+v", d)
	}
}

// BenchmarkService_Authenticate measures Authenticate answered from the
// session cache, the path every authenticated request takes.
func BenchmarkService_Authenticate(b *testing.B) {
	ctx := context.Background()
	clk := newClock()
	s := mustService(b, newSpy(16), clk, nil)
	var tokens []string
	for i := range 64 {
		name := fmt.Sprintf("user%d", i)
		mustRegister(b, s, name)
		tokens = append(tokens, mustLogin(b, s, name).Token)
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := s.Authenticate(ctx, tokens[i%len(tokens)]); err != nil {
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
				if _, _, err := s.Authenticate(ctx, tokens[i%len(tokens)]); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}
