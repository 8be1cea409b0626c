package account_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/errs"
)

func mustToken(t testing.TB, s *account.Service, req account.CreateTokenRequest) account.APIToken {
	t.Helper()
	tok, err := s.CreateToken(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateToken(%+v): %v", req, err)
	}
	return tok
}

func TestService_CreateTokenAndAuthenticate(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := mustService(t, newSpy(4), clk, nil)
	mustRegister(t, s, "alice") // admin
	mustRegister(t, s, "Bob")

	tok := mustToken(t, s, account.CreateTokenRequest{Username: "bob", Name: "ci bot", Scopes: []string{"write:room/General", "read"}, TTL: time.Hour})
	if !strings.HasPrefix(tok.Token, "pat_bob.") || !account.IsAPIToken(tok.Token) {
		t.Fatalf("token %q is not a personal API token", tok.Token)
	}
	if got := strings.Join(tok.Scopes.Strings(), " "); got != "read write:room/general" {
		t.Fatalf("scopes = %q, want them canonical", got)
	}
	info, err := s.Session(ctx, tok.Token)
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	if info.Username != "Bob" || info.Admin || info.TokenID != tok.ID || len(info.Scopes) != 2 {
		t.Fatalf("Session = %+v", info)
	}
	if !info.Scopes.Allows(account.LevelWrite, account.KindRoom, "GENERAL") || info.Scopes.Allows(account.LevelWrite, account.KindRoom, "other") ||
		!info.Scopes.Allows(account.LevelRead, "", "") || info.Scopes.Allows(account.LevelWrite, "", "") {
		t.Fatalf("scopes %v allow the wrong things", info.Scopes)
	}
	// A login session has no scopes: full rights.
	sess := mustLogin(t, s, "Bob")
	if info, err := s.Session(ctx, sess.Token); err != nil || info.Scopes != nil || info.TokenID != "" {
		t.Fatalf("login Session = %+v, %v", info, err)
	}

	t.Run("the secret is not stored", func(t *testing.T) {
		list, err := s.ListTokens(ctx, "BOB")
		if err != nil || len(list) != 1 {
			t.Fatalf("ListTokens = %+v, %v", list, err)
		}
		if got := list[0]; got.Token != "" || got.ID != tok.ID || got.Name != "ci bot" || !got.ExpiresAt.Equal(tok.ExpiresAt) {
			t.Fatalf("listed %+v, want %+v without its secret", got, tok)
		}
	})
	t.Run("a token of one user does not open another's", func(t *testing.T) {
		forged := "pat_alice" + tok.Token[strings.IndexByte(tok.Token, '.'):]
		for _, bad := range []string{forged, tok.Token + "x", tok.Token[:len(tok.Token)-1], strings.TrimPrefix(tok.Token, "pat_")} {
			_, err := s.Session(ctx, bad)
			wantCode(t, err, errs.Unauthorized)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		clk.Advance(time.Hour + account.DefaultCacheTTL)
		_, err := s.Session(ctx, tok.Token)
		wantCode(t, err, errs.Unauthorized)
	})
}

func TestService_CreateTokenValidation(t *testing.T) {
	ctx := context.Background()
	s := mustService(t, newSpy(2), newClock(), nil)
	mustRegister(t, s, "alice") // admin
	mustRegister(t, s, "bob")
	cases := []struct {
		name string
		req  account.CreateTokenRequest
		code errs.Code
		msg  string
	}{
		{"no name", account.CreateTokenRequest{Username: "bob", Scopes: []string{"read"}}, errs.Invalid, "name"},
		{"control char", account.CreateTokenRequest{Username: "bob", Name: "a\x1bb", Scopes: []string{"read"}}, errs.Invalid, "name"},
		{"no scopes", account.CreateTokenRequest{Username: "bob", Name: "n"}, errs.Invalid, "scopes"},
		{"bad level", account.CreateTokenRequest{Username: "bob", Name: "n", Scopes: []string{"root"}}, errs.Invalid, "read, write or admin"},
		{"bad kind", account.CreateTokenRequest{Username: "bob", Name: "n", Scopes: []string{"read:kv/x"}}, errs.Invalid, "room/NAME"},
		{"bad room", account.CreateTokenRequest{Username: "bob", Name: "n", Scopes: []string{"read:room/a b"}}, errs.Invalid, "room name"},
		{"narrowed admin", account.CreateTokenRequest{Username: "alice", Admin: true, Name: "n", Scopes: []string{"admin:room/x"}}, errs.Invalid, "admin cannot be narrowed"},
		{"admin by a user", account.CreateTokenRequest{Username: "bob", Name: "n", Scopes: []string{"admin"}}, errs.Forbidden, "only an admin"},
		{"too long", account.CreateTokenRequest{Username: "bob", Name: "n", Scopes: []string{"read"}, TTL: account.MaxTokenTTL + time.Hour}, errs.Invalid, "expires_in"},
		{"too short", account.CreateTokenRequest{Username: "bob", Name: "n", Scopes: []string{"read"}, TTL: time.Millisecond}, errs.Invalid, "expires_in"},
		{"no such user", account.CreateTokenRequest{Username: "carol", Name: "n", Scopes: []string{"read"}}, errs.NotFound, "user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateToken(ctx, tc.req)
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q does not say %q", err, tc.msg)
			}
		})
	}
	if list, err := s.ListTokens(ctx, "bob"); err != nil || len(list) != 0 {
		t.Fatalf("refused requests left tokens: %+v, %v", list, err)
	}
	admin := mustToken(t, s, account.CreateTokenRequest{Username: "alice", Admin: true, Name: "ops", Scopes: []string{"admin"}})
	if admin.ExpiresAt.Sub(admin.CreatedAt) != account.DefaultTokenTTL {
		t.Fatalf("default lifetime %v, want %v", admin.ExpiresAt.Sub(admin.CreatedAt), account.DefaultTokenTTL)
	}
}

// TestService_RevokeToken revokes through one node a token another node
// has cached: refused there within CacheTTL, at once where revoked.
func TestService_RevokeToken(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(4)
	node1 := mustService(t, r, clk, nil)
	node2 := mustService(t, r, clk, nil)
	mustRegister(t, node1, "alice")
	tok := mustToken(t, node1, account.CreateTokenRequest{Username: "alice", Name: "bot", Scopes: []string{"read"}})
	keep := mustToken(t, node1, account.CreateTokenRequest{Username: "alice", Name: "other", Scopes: []string{"read"}})
	for _, n := range []*account.Service{node1, node2} {
		if _, err := n.Session(ctx, tok.Token); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, node1.RevokeToken(ctx, "alice", "not-an-id"), errs.Invalid)
	wantCode(t, node1.RevokeToken(ctx, "alice", "0123456789abcdef"), errs.NotFound)
	if err := node1.RevokeToken(ctx, "ALICE", tok.ID); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	_, err := node1.Session(ctx, tok.Token)
	wantCode(t, err, errs.Unauthorized)
	clk.Advance(account.DefaultCacheTTL)
	_, err = node2.Session(ctx, tok.Token)
	wantCode(t, err, errs.Unauthorized)
	if _, err := node2.Session(ctx, keep.Token); err != nil {
		t.Fatalf("the other token stopped working: %v", err)
	}
	wantCode(t, node1.RevokeToken(ctx, "alice", tok.ID), errs.NotFound)
	list, err := node2.ListTokens(ctx, "alice")
	if err != nil || len(list) != 1 || list[0].ID != keep.ID {
		t.Fatalf("ListTokens after revoking = %+v, %v", list, err)
	}
}

// TestService_TokenUses checks last use: noted in memory by each use,
// written by FlushTokenUses in one command per partition for many uses.
func TestService_TokenUses(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(1) // one partition: every token's use in one command
	s := mustService(t, r, clk, func(c *account.Config) { c.CacheTTL = -1 })
	other := mustService(t, r, clk, nil)
	mustRegister(t, s, "alice")
	mustRegister(t, s, "bob")
	a := mustToken(t, s, account.CreateTokenRequest{Username: "alice", Name: "a", Scopes: []string{"read"}})
	b := mustToken(t, s, account.CreateTokenRequest{Username: "bob", Name: "b", Scopes: []string{"read"}})
	if list, _ := s.ListTokens(ctx, "alice"); !list[0].LastUsedAt.IsZero() {
		t.Fatalf("unused token has last use %v", list[0].LastUsedAt)
	}
	clk.Advance(time.Minute)
	before := r.proposals.Load()
	for range 100 {
		for _, tok := range []account.APIToken{a, b} {
			if _, err := s.Session(ctx, tok.Token); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := r.proposals.Load() - before; n != 0 {
		t.Fatalf("uses made %d proposals before a flush", n)
	}
	// This node counts its unflushed uses; another does not know them yet.
	if list, _ := s.ListTokens(ctx, "alice"); !list[0].LastUsedAt.Equal(clk.Now()) {
		t.Fatalf("last use here = %v, want %v", list[0].LastUsedAt, clk.Now())
	}
	if list, _ := other.ListTokens(ctx, "alice"); !list[0].LastUsedAt.IsZero() {
		t.Fatalf("last use elsewhere before a flush = %v", list[0].LastUsedAt)
	}
	if err := s.FlushTokenUses(ctx); err != nil {
		t.Fatalf("FlushTokenUses: %v", err)
	}
	if n := r.proposals.Load() - before; n != 1 {
		t.Fatalf("flushing 200 uses of 2 tokens made %d proposals, want 1", n)
	}
	for _, name := range []string{"alice", "bob"} {
		if list, _ := other.ListTokens(ctx, name); !list[0].LastUsedAt.Equal(clk.Now()) {
			t.Fatalf("%s's last use after the flush = %v, want %v", name, list[0].LastUsedAt, clk.Now())
		}
	}
	if err := s.FlushTokenUses(ctx); err != nil || r.proposals.Load()-before != 1 {
		t.Fatalf("a flush with nothing new proposed (err %v)", err)
	}

	t.Run("a failed flush keeps its uses", func(t *testing.T) {
		clk.Advance(time.Minute)
		if _, err := s.Session(ctx, a.Token); err != nil {
			t.Fatal(err)
		}
		r.setFail(func([]byte) error { return errs.New(errs.Unavailable, "no quorum") })
		if err := s.FlushTokenUses(ctx); err == nil {
			t.Fatal("FlushTokenUses succeeded with every proposal failing")
		}
		r.setFail(nil)
		if err := s.FlushTokenUses(ctx); err != nil {
			t.Fatal(err)
		}
		if list, _ := other.ListTokens(ctx, "alice"); !list[0].LastUsedAt.Equal(clk.Now()) {
			t.Fatalf("last use after the retried flush = %v, want %v", list[0].LastUsedAt, clk.Now())
		}
	})
}

// TestService_TokensWaitForUpgrade: while some node speaks an older
// protocol, token commands are refused as retryable and nothing is
// proposed; uses wait for the upgrade too.
func TestService_TokensWaitForUpgrade(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(2)
	protocol := 1
	s := mustService(t, r, clk, func(c *account.Config) { c.ClusterProtocol = func() int { return protocol } })
	mustRegister(t, s, "alice")
	before := r.proposals.Load()
	req := account.CreateTokenRequest{Username: "alice", Name: "bot", Scopes: []string{"read"}}
	_, err := s.CreateToken(ctx, req)
	wantCode(t, err, errs.UpgradeInProgress)
	if e, ok := err.(*errs.Error); !ok || !e.Retryable {
		t.Fatalf("refusal %#v is not retryable", err)
	}
	wantCode(t, s.RevokeToken(ctx, "alice", "0123456789abcdef"), errs.UpgradeInProgress)
	if n := r.proposals.Load() - before; n != 0 {
		t.Fatalf("%d proposals during the upgrade", n)
	}
	protocol = account.TokenProtocol
	tok := mustToken(t, s, req)
	protocol = 1 // a node of the old build joins again
	clk.Advance(time.Second)
	if _, err := s.Session(ctx, tok.Token); err != nil {
		t.Fatal(err)
	}
	before = r.proposals.Load()
	if err := s.FlushTokenUses(ctx); err != nil || r.proposals.Load() != before {
		t.Fatalf("uses flushed during an upgrade (err %v)", err)
	}
	protocol = account.TokenProtocol
	if err := s.FlushTokenUses(ctx); err != nil || r.proposals.Load() != before+1 {
		t.Fatalf("uses not flushed after the upgrade (err %v)", err)
	}
}

// TestService_TokenLimit: a user holds at most MaxTokensPerUser tokens;
// expired ones make room.
func TestService_TokenLimit(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	r := newSpy(1)
	s := mustService(t, r, clk, nil)
	mustRegister(t, s, "alice")
	for i := range account.MaxTokensPerUser {
		ttl := time.Hour
		if i == 0 {
			ttl = time.Second
		}
		mustToken(t, s, account.CreateTokenRequest{Username: "alice", Name: "t", Scopes: []string{"read"}, TTL: ttl})
	}
	_, err := s.CreateToken(ctx, account.CreateTokenRequest{Username: "alice", Name: "t", Scopes: []string{"read"}})
	wantCode(t, err, errs.Conflict)
	r.Advance(2 * time.Second) // the leader's clock: the first token expired
	mustToken(t, s, account.CreateTokenRequest{Username: "alice", Name: "t", Scopes: []string{"read"}})
	if list, err := s.ListTokens(ctx, "alice"); err != nil || len(list) != account.MaxTokensPerUser {
		t.Fatalf("listed %d tokens (%v), want %d", len(list), err, account.MaxTokensPerUser)
	}
}

// noQuorum is a replicator whose proposals, once lost is set, never
// commit: they wait for their context, as on a node whose peers are gone.
type noQuorum struct {
	*spy
	lost *atomic.Bool
}

func (n noQuorum) Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error) {
	if n.lost.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return n.spy.Propose(ctx, p, dedupKey, cmd)
}

// TestService_TokenUseFlusherStopsWithoutQuorum checks that a node shutting
// down with unflushed token uses and no quorum stops in seconds, not after
// a whole flush interval (it used to hold Close for a minute).
func TestService_TokenUseFlusherStopsWithoutQuorum(t *testing.T) {
	clk := newClock()
	r := noQuorum{newSpy(1), new(atomic.Bool)}
	s := mustService(t, r, clk, nil) // the default flush interval: a minute
	mustRegister(t, s, "alice")
	tok := mustToken(t, s, account.CreateTokenRequest{Username: "alice", Name: "a", Scopes: []string{"read"}})
	if _, err := s.Session(context.Background(), tok.Token); err != nil {
		t.Fatal(err)
	}
	r.lost.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go s.RunTokenUseFlusher(ctx, func(err error) { done <- err })
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the final flush without quorum reported no failure")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("RunTokenUseFlusher still flushing 20s after its context ended")
	}
}
