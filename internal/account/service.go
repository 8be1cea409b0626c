package account

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/password"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/wire"
)

// AdminClaimRoutingKey routes the cluster's one admin seat. It starts with
// 0x00, which no username can, so it shares its partition with users only by
// chance of the hash.
const AdminClaimRoutingKey = "\x00first-admin"

// RegistrationMode says who may create users.
type RegistrationMode string

// Registration modes.
const (
	// RegistrationOpen lets anyone register.
	RegistrationOpen RegistrationMode = "open"
	// RegistrationClosed lets only admins create users, except the first
	// user, who becomes admin (see the package doc).
	RegistrationClosed RegistrationMode = "closed"
)

// Defaults of Config.
const (
	DefaultMinPassword = 8
	DefaultMaxPassword = 256
	DefaultSessionTTL  = 7 * 24 * time.Hour
	DefaultCacheTTL    = 500 * time.Millisecond
	DefaultCacheSize   = 1 << 16
	MaxCacheTTL        = time.Second // revocation must reach every node within 1 s
)

// Config tunes a Service. Zero fields take the defaults.
type Config struct {
	// Registration is RegistrationOpen (the default) or RegistrationClosed.
	Registration RegistrationMode
	// MinPassword and MaxPassword bound a password's length in bytes (8, 256).
	MinPassword, MaxPassword int
	// Hasher hashes and verifies passwords, bounding how many run at once.
	// Give every service of a node the same Hasher so that the bound is the
	// node's. Nil: NewService builds one with password.DefaultParams and the
	// default concurrency.
	Hasher *password.Hasher
	// SessionTTL is how long a session lasts after login (7 days).
	SessionTTL time.Duration
	// CacheTTL is how long Authenticate trusts an answer it has read: the
	// bound on how late a revocation is seen on another node (500 ms, at most
	// MaxCacheTTL). Negative disables the cache: every call reads
	// linearizably.
	CacheTTL time.Duration
	// CacheSize caps the session cache's entries (65536).
	CacheSize int
	// Limiter, when set, limits Register and Login attempts per client
	// address (ratelimit.LoginsPerAddress) and Login attempts per account
	// (ratelimit.LoginsPerUser); nil means no limit.
	Limiter Limiter
	// Now is the clock (time.Now). Only Authenticate's expiry checks and the
	// cache use it; Apply uses the leader's time.
	Now func() time.Time
	// Rand is the source of session tokens (crypto/rand.Reader).
	Rand io.Reader
	// ClusterProtocol returns the internal protocol every node of the
	// cluster speaks (compat.ClusterProtocol). Personal API token commands
	// are refused with errs.UpgradeInProgress while it is below
	// TokenProtocol. Nil: every node speaks this build's protocol.
	ClusterProtocol func() int
	// TokenUseFlush is how often FlushTokenUses runs under
	// RunTokenUseFlusher, the most a token's last use may lag (1 minute).
	TokenUseFlush time.Duration
}

// Limiter refuses attempts past a limit. The node's limiter counts them
// across the cluster (internal/node/limits.go).
type Limiter interface {
	// Take takes one attempt of the named limit for key, or returns an
	// errs.RateLimited error when none is left.
	Take(ctx context.Context, limit, key string) error
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.Registration == "" {
		c.Registration = RegistrationOpen
	}
	if c.MinPassword <= 0 {
		c.MinPassword = DefaultMinPassword
	}
	if c.MaxPassword <= 0 {
		c.MaxPassword = DefaultMaxPassword
	}
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.CacheTTL == 0 {
		c.CacheTTL = DefaultCacheTTL
	}
	if c.CacheSize <= 0 {
		c.CacheSize = DefaultCacheSize
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
	if c.TokenUseFlush <= 0 {
		c.TokenUseFlush = DefaultTokenUseFlush
	}
	return c
}

// Validate reports a Config that cannot work.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Registration != RegistrationOpen && c.Registration != RegistrationClosed:
		return fmt.Errorf("account: registration mode %q is neither open nor closed", c.Registration)
	case c.MinPassword > c.MaxPassword:
		return fmt.Errorf("account: minimum password length %d exceeds the maximum %d", c.MinPassword, c.MaxPassword)
	case c.CacheTTL > MaxCacheTTL:
		return fmt.Errorf("account: cache TTL %v exceeds %v", c.CacheTTL, MaxCacheTTL)
	}
	return nil
}

// User describes a registered user.
type User struct {
	// Username is the name as registered; lookups ignore case.
	Username  string
	Admin     bool
	CreatedAt time.Time
}

// Session is the answer to a successful login.
type Session struct {
	// Token is the bearer token: "<lowercased username>.<random>".
	Token     string
	Username  string
	ExpiresAt time.Time
}

// RegisterRequest is a call to Register.
type RegisterRequest struct {
	Username, Password string
	// ClientAddr is the caller's address, the key of the per-address limit.
	ClientAddr string
	// ByAdmin is true when an authenticated admin makes the call; with
	// registration closed only admins may create users.
	ByAdmin bool
	// IdempotencyKey, when not empty, makes a retry within the dedup window
	// return the first result instead of errs.Conflict.
	IdempotencyKey string
}

// Service registers users and manages their sessions. It is safe for
// concurrent use.
type Service struct {
	r      state.Replicator
	cfg    Config
	hasher *password.Hasher
	cache  *sessionCache // nil when disabled
	// uses holds the token uses not yet written; flushMu lets one
	// FlushTokenUses run at a time (token_use.go).
	uses    *useTracker
	flushMu sync.Mutex
}

// NewService returns a Service that replicates through r. Without
// Config.Hasher, building it hashes one random password (the stand-in
// verified for unknown users).
func NewService(r state.Replicator, cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Hasher == nil {
		h, err := password.NewHasher(password.DefaultParams(), 0)
		if err != nil {
			return nil, err
		}
		cfg.Hasher = h
	}
	s := &Service{r: r, cfg: cfg, hasher: cfg.Hasher, uses: newUseTracker()}
	if cfg.CacheTTL > 0 {
		s.cache = newSessionCache(cfg.CacheTTL, cfg.CacheSize)
	}
	return s, nil
}

// Config returns the configuration in force, defaults filled in.
func (s *Service) Config() Config { return s.cfg }

// CacheStats returns the session cache's hits and misses (0, 0 when the cache
// is disabled).
func (s *Service) CacheStats() (hits, misses uint64) {
	if s.cache == nil {
		return 0, 0
	}
	return s.cache.stats()
}

// Register creates a user; the first user ever registered in the cluster is
// admin (see the package doc for how that is decided once). Errors:
// errs.Invalid naming the field for a bad username, password or idempotency
// key; errs.RateLimited; errs.Forbidden when registration is closed and the
// caller is not an admin; errs.Conflict when the name is taken, whatever its
// case.
func (s *Service) Register(ctx context.Context, req RegisterRequest) (User, error) {
	if err := CheckUsername(req.Username); err != nil {
		return User{}, err
	}
	if err := checkPassword(req.Password, s.cfg.MinPassword, s.cfg.MaxPassword); err != nil {
		return User{}, err
	}
	if err := wire.CheckIdempotencyKey(req.IdempotencyKey); err != nil {
		return User{}, err
	}
	if err := s.allow(ctx, req.ClientAddr, ""); err != nil {
		return User{}, err
	}
	lower := ident.Fold(req.Username)
	holder, err := s.readClaim(ctx)
	if err != nil {
		return User{}, err
	}
	if err := s.mayRegister(req.ByAdmin, holder, lower); err != nil {
		return User{}, err
	}
	if req.IdempotencyKey == "" {
		// Refuse a taken name before paying for a hash; Apply decides races.
		if _, found, err := s.readUser(ctx, lower); err != nil {
			return User{}, err
		} else if found {
			return User{}, errs.New(errs.Conflict, "username is taken")
		}
	}
	phc, err := s.hasher.Hash(ctx, req.Password)
	if err != nil {
		return User{}, fmt.Errorf("account: hash password: %w", err)
	}
	if holder == "" {
		if holder, err = s.claimAdmin(ctx, lower); err != nil {
			return User{}, err
		}
		if err := s.mayRegister(req.ByAdmin, holder, lower); err != nil {
			return User{}, err
		}
	}
	cmd := EncodeCreateUser(CreateUser{Username: req.Username, PasswordHash: phc, Admin: holder == lower})
	res, err := s.r.Propose(ctx, s.r.PartitionOf(lower), dedupKey(opCreateUser, lower, req.IdempotencyKey), cmd)
	if err != nil {
		return User{}, fmt.Errorf("account: create user %q: %w", req.Username, err)
	}
	u, err := decodeUserResult(res)
	if err != nil {
		return User{}, err
	}
	return User{Username: u.name, Admin: u.admin, CreatedAt: time.UnixMilli(u.createdMs)}, nil
}

// mayRegister applies the registration mode: with registration closed, a
// caller who is not an admin may register only while the admin seat is free
// (holder "") or held by the very name being registered.
func (s *Service) mayRegister(byAdmin bool, holder, lower string) error {
	if s.cfg.Registration == RegistrationClosed && !byAdmin && holder != "" && holder != lower {
		return errs.New(errs.Forbidden, "registration is closed; ask an admin to create your account")
	}
	return nil
}

// claimAdmin proposes the admin claim for lower and returns the seat's
// holder.
func (s *Service) claimAdmin(ctx context.Context, lower string) (string, error) {
	res, err := s.r.Propose(ctx, s.r.PartitionOf(AdminClaimRoutingKey), "", EncodeClaimAdmin(ClaimAdmin{Username: lower}))
	if err != nil {
		return "", fmt.Errorf("account: claim admin: %w", err)
	}
	return decodeClaimResult(res)
}

// Login checks a username (any case) and password and opens a session.
// Every refusal is the same errs.Unauthorized, and an unknown username costs
// the same hash as a wrong password, so neither reveals which users exist.
// Logins are not idempotent: a retry opens another session, which is
// harmless.
func (s *Service) Login(ctx context.Context, username, password, clientAddr string) (Session, error) {
	denied := errs.New(errs.Unauthorized, "invalid username or password")
	badName := CheckUsername(username) != nil
	lower := ""
	if !badName {
		lower = ident.Fold(username)
	}
	if err := s.allow(ctx, clientAddr, lower); err != nil {
		return Session{}, err
	}
	if badName || len(password) > s.cfg.MaxPassword {
		return Session{}, denied
	}
	u, _, err := s.readUser(ctx, lower)
	if err != nil {
		return Session{}, err
	}
	ok, err := s.hasher.Verify(ctx, u.passwordHash, password)
	if err != nil {
		return Session{}, fmt.Errorf("account: verify password of %q: %w", lower, err)
	}
	if !ok {
		return Session{}, denied
	}
	token, err := newToken(lower, s.cfg.Rand)
	if err != nil {
		return Session{}, err
	}
	digest := tokenDigest(token)
	start := s.cfg.Now()
	cmd := EncodeCreateSession(CreateSession{Username: lower, TokenHash: digest, TTLMs: uint64(s.cfg.SessionTTL.Milliseconds())})
	res, err := s.r.Propose(ctx, s.r.PartitionOf(lower), "", cmd)
	if err != nil {
		return Session{}, fmt.Errorf("account: create session of %q: %w", lower, err)
	}
	name, admin, expiresMs, err := decodeSessionResult(res)
	if err != nil {
		return Session{}, err
	}
	if s.cache != nil {
		s.cache.put(digest, cachedSession{username: name, admin: admin, expiresMs: expiresMs}, start)
	}
	return Session{Token: token, Username: name, ExpiresAt: time.UnixMilli(expiresMs)}, nil
}

// Logout revokes the session of token: at once on this node, and on every
// other node within CacheTTL. An unknown, malformed or already revoked token
// is errs.Unauthorized.
func (s *Service) Logout(ctx context.Context, token string) error {
	lower, digest, ok := parseToken(token)
	if !ok {
		return errs.New(errs.Unauthorized, "invalid session token")
	}
	if s.cache != nil {
		s.cache.forget(digest)
	}
	res, err := s.r.Propose(ctx, s.r.PartitionOf(lower), "", EncodeDeleteSession(DeleteSession{TokenHash: digest}))
	if err != nil {
		return fmt.Errorf("account: delete session: %w", err)
	}
	if s.cache != nil {
		s.cache.forget(digest) // an Authenticate racing with the delete may have cached it
	}
	if err := decodeDeleteResult(res); errs.Is(err, errs.NotFound) {
		return errs.New(errs.Unauthorized, "invalid session token")
	} else if err != nil {
		return err
	}
	return nil
}

// Authenticate returns the user a token belongs to and whether that user is
// admin: Session without the expiry.
func (s *Service) Authenticate(ctx context.Context, token string) (username string, admin bool, err error) {
	info, err := s.Session(ctx, token)
	return info.Username, info.Admin, err
}

// SessionInfo describes the session of a valid token.
type SessionInfo struct {
	// Username is the user's name as registered.
	Username string
	// Admin is true for administrators.
	Admin bool
	// ExpiresAt is when the session ends.
	ExpiresAt time.Time
	// Left is how long the session had left when it was checked, by the
	// Service's clock (Config.Now): what a caller timing the expiry with
	// its own clock should count down from.
	Left time.Duration
	// TokenID is the id of the personal API token, "" for a login session.
	TokenID string
	// Scopes are what the personal API token may do; nil for a login
	// session, which may do everything its user may.
	Scopes Scopes
}

// Session returns the session a token opens: a login session's, or a
// personal API token's (with its id and scopes). It answers from the
// node-local cache when it holds an answer younger than CacheTTL, and
// otherwise reads the session linearizably from its partition. An unknown,
// malformed, expired or revoked token is errs.Unauthorized; a revoked one is
// refused on every node within CacheTTL of the Logout or RevokeToken
// returning. A use of an API token is noted for FlushTokenUses.
func (s *Service) Session(ctx context.Context, token string) (SessionInfo, error) {
	lower, digest, ok := parseToken(token)
	api := false
	if !ok {
		lower, digest, ok = parseAPIToken(token)
		api = ok
	}
	if !ok {
		return SessionInfo{}, errs.New(errs.Unauthorized, "invalid session token")
	}
	now := s.cfg.Now()
	e, hit := cachedSession{}, false
	if s.cache != nil {
		e, hit = s.cache.get(digest, now)
	}
	if !hit {
		var err error
		if e, err = s.readSession(ctx, lower, digest, api); err != nil {
			return SessionInfo{}, err
		}
		if s.cache != nil {
			s.cache.put(digest, e, now)
		}
	}
	if e.username == "" || now.UnixMilli() >= e.expiresMs {
		if api {
			return SessionInfo{}, errs.New(errs.Unauthorized, "invalid, revoked or expired API token")
		}
		return SessionInfo{}, errs.New(errs.Unauthorized, "invalid or expired session token")
	}
	if api {
		s.uses.note(digest, lower, e.tokenID, now.UnixMilli())
	}
	expires := time.UnixMilli(e.expiresMs)
	return SessionInfo{Username: e.username, Admin: e.admin, ExpiresAt: expires, Left: expires.Sub(now), TokenID: e.tokenID, Scopes: e.scopes}, nil
}

// Lookup returns the user named username, in any case; errs.NotFound when
// there is none. The read is linearizable.
func (s *Service) Lookup(ctx context.Context, username string) (User, error) {
	if err := CheckUsername(username); err != nil {
		return User{}, err
	}
	u, found, err := s.readUser(ctx, ident.Fold(username))
	if err != nil {
		return User{}, err
	}
	if !found {
		return User{}, errs.New(errs.NotFound, "user not found")
	}
	return User{Username: u.name, Admin: u.admin, CreatedAt: time.UnixMilli(u.createdMs)}, nil
}

// allow takes one attempt from addr and, when lower is not empty, one
// attempt at the account lower, or returns the refusal.
func (s *Service) allow(ctx context.Context, addr, lower string) error {
	if s.cfg.Limiter == nil {
		return nil
	}
	if err := s.cfg.Limiter.Take(ctx, ratelimit.LoginsPerAddress, addr); err != nil {
		return err
	}
	if lower == "" {
		return nil
	}
	return s.cfg.Limiter.Take(ctx, ratelimit.LoginsPerUser, lower)
}

// readClaim returns the admin seat's holder, "" when it is free.
func (s *Service) readClaim(ctx context.Context) (holder string, err error) {
	_, err = s.r.Read(ctx, s.r.PartitionOf(AdminClaimRoutingKey), false, func(r state.Reader) error {
		holder, err = AdminHolder(r)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("account: read admin claim: %w", err)
	}
	return holder, nil
}

func (s *Service) readUser(ctx context.Context, lower string) (u userRecord, found bool, err error) {
	_, err = s.r.Read(ctx, s.r.PartitionOf(lower), false, func(r state.Reader) error {
		u, found, err = getUser(r, lower)
		return err
	})
	if err != nil {
		return userRecord{}, false, fmt.Errorf("account: read user %q: %w", lower, err)
	}
	return u, found, nil
}

// readSession reads the session (api: the personal API token) of digest
// and its user; the zero entry (no username) means unknown.
func (s *Service) readSession(ctx context.Context, lower string, digest [TokenHashLen]byte, api bool) (e cachedSession, err error) {
	p := s.r.PartitionOf(lower)
	get := getSession
	if api {
		get = getAPIToken
	}
	read := func(r state.Reader) error {
		e, err = get(r, digest)
		return err
	}
	lctx, cancel := context.WithTimeout(ctx, sessionQuorumBudget)
	_, err = s.r.Read(lctx, p, false, read)
	cancel()
	if err != nil && (errs.Is(err, errs.Unavailable) || errs.Is(err, errs.Timeout)) && ctx.Err() == nil {
		// No quorum answered: this node is cut off from a majority. It still
		// serves stale reads, so it accepts the sessions its own replica
		// knows; a logout made on the majority side reaches it when the
		// partition heals. Writes and linearizable reads fail here anyway.
		// A session its replica does not know may be newer than what the
		// replica applied (a lagging node: a full disk), so that is no
		// answer: the client retries, where a 401 would sign it out.
		if _, err = s.r.Read(ctx, p, true, read); err == nil && e.username == "" {
			err = errs.New(errs.Unavailable, "this node cannot confirm the session now (its replica lags its partition's majority); retry")
		}
	}
	if err != nil {
		return cachedSession{}, fmt.Errorf("account: read session: %w", err)
	}
	return e, nil
}

// sessionQuorumBudget bounds the linearizable session read before
// Authenticate falls back to the local replica.
const sessionQuorumBudget = 2 * time.Second

// dedupKey returns the replication dedup key of an account command for an
// idempotency key: Tag, op, uvarint len(name), name, idempotencyKey; "" when
// idempotencyKey is empty. The tag keeps account retries apart from other
// domains' in the same partition, the length prefix keeps ("ab","c") apart
// from ("a","bc").
func dedupKey(op byte, name, idempotencyKey string) string {
	return wire.NewDedupKey(idempotencyKey, Tag, op).String(name).Raw(idempotencyKey).Done()
}
