package account

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"io"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/text"
)

// Limits of personal API tokens.
const (
	// DefaultTokenTTL is a token's lifetime when the request names none.
	DefaultTokenTTL = 90 * 24 * time.Hour
	// MaxTokenTTL is the longest lifetime a token may have.
	MaxTokenTTL = 365 * 24 * time.Hour
	// MinTokenTTL is the shortest.
	MinTokenTTL = time.Second
	// MaxTokenName bounds a token's name in bytes.
	MaxTokenName = 64
	// tokenIDBytes is the random part of a token id (16 hex digits).
	tokenIDBytes = 8
)

// APIToken describes a personal API token. The token itself (Token) is
// known only to the answer of CreateToken: the cluster keeps its digest.
type APIToken struct {
	// ID names the token for listing and revoking: 16 hex digits.
	ID string
	// Name is the owner's label for it.
	Name string
	// Username is the owner's lowercased name.
	Username string
	Scopes   Scopes
	// CreatedAt and ExpiresAt bound its life.
	CreatedAt, ExpiresAt time.Time
	// LastUsedAt is its latest use known (zero: never). Uses are recorded
	// in batches (Config.TokenUseFlush), so it may lag by that long.
	LastUsedAt time.Time
	// Token is the bearer token, set only in CreateToken's answer.
	Token string
}

// CreateTokenRequest is a call to CreateToken.
type CreateTokenRequest struct {
	// Username is the owner, who must be the caller.
	Username string
	// Admin is whether the caller is an admin: only admins may grant the
	// admin scope.
	Admin bool
	// Name labels the token: 1 to MaxTokenName bytes of one line of text.
	Name string
	// Scopes are the scopes as written ("read", "write:room/general").
	Scopes []string
	// TTL is the token's lifetime: 0 for DefaultTokenTTL, else MinTokenTTL
	// to MaxTokenTTL.
	TTL time.Duration
}

// CreateToken makes a personal API token for the request's user and
// returns it with its secret, which is never shown again. It is not
// idempotent: a retry makes another token, which its owner can list and
// revoke. Errors: errs.Invalid naming the field; errs.Forbidden for the
// admin scope asked by a non-admin; errs.Conflict past MaxTokensPerUser;
// errs.UpgradeInProgress while some node runs an older build.
func (s *Service) CreateToken(ctx context.Context, req CreateTokenRequest) (APIToken, error) {
	if err := CheckUsername(req.Username); err != nil {
		return APIToken{}, err
	}
	if err := checkTokenName(req.Name); err != nil {
		return APIToken{}, err
	}
	scopes, err := ParseScopes(req.Scopes)
	if err != nil {
		return APIToken{}, err
	}
	if scopes.Has(LevelAdmin) && !req.Admin {
		return APIToken{}, errs.New(errs.Forbidden, "only an admin may grant the admin scope")
	}
	ttl := cmp.Or(req.TTL, DefaultTokenTTL)
	if ttl < MinTokenTTL || ttl > MaxTokenTTL {
		return APIToken{}, errs.New(errs.Invalid, "expires_in: from %v to %v (%d days)", MinTokenTTL, MaxTokenTTL, MaxTokenTTL/(24*time.Hour))
	}
	if err := s.tokensReady(); err != nil {
		return APIToken{}, err
	}
	lower := ident.Fold(req.Username)
	token, err := newAPIToken(lower, s.cfg.Rand)
	if err != nil {
		return APIToken{}, err
	}
	id, err := newTokenID(s.cfg.Rand)
	if err != nil {
		return APIToken{}, err
	}
	c := CreateToken{Username: lower, TokenHash: tokenDigest(token), ID: id, Name: req.Name, Scopes: scopes, TTLMs: uint64(ttl.Milliseconds())}
	res, err := s.r.Propose(ctx, s.r.PartitionOf(lower), "", EncodeCreateToken(c))
	if err != nil {
		return APIToken{}, fmt.Errorf("account: create token of %q: %w", lower, err)
	}
	created, expires, err := decodeTokenResult(res)
	if err != nil {
		return APIToken{}, err
	}
	return APIToken{
		ID: id, Name: req.Name, Username: lower, Scopes: scopes, Token: token,
		CreatedAt: time.UnixMilli(created), ExpiresAt: time.UnixMilli(expires),
	}, nil
}

// ListTokens returns the personal API tokens of username (any case),
// oldest first, without their secrets; expired ones are listed until the
// user next creates a token. Uses this node saw but has not flushed yet
// count in LastUsedAt. The read is linearizable.
func (s *Service) ListTokens(ctx context.Context, username string) ([]APIToken, error) {
	if err := CheckUsername(username); err != nil {
		return nil, err
	}
	lower := ident.Fold(username)
	var recs []tokenRecord
	_, err := s.r.Read(ctx, s.r.PartitionOf(lower), false, func(r state.Reader) (err error) {
		recs, err = listTokens(r, lower)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("account: list tokens of %q: %w", lower, err)
	}
	out := make([]APIToken, 0, len(recs))
	for _, t := range recs {
		used := max(t.lastUsedMs, s.uses.latestOf(t.username, t.id))
		tok := APIToken{
			ID: t.id, Name: t.name, Username: t.username, Scopes: t.scopes,
			CreatedAt: time.UnixMilli(t.createdMs), ExpiresAt: time.UnixMilli(t.expiresMs),
		}
		if used > 0 {
			tok.LastUsedAt = time.UnixMilli(used)
		}
		out = append(out, tok)
	}
	slices.SortStableFunc(out, func(a, b APIToken) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// RevokeToken deletes the token id of username (any case): it stops
// working at once on this node and on every other within CacheTTL, like a
// logout. errs.NotFound when there is no such token; errs.UpgradeInProgress
// while some node runs an older build.
func (s *Service) RevokeToken(ctx context.Context, username, id string) error {
	if err := CheckUsername(username); err != nil {
		return err
	}
	if !validTokenID(id) {
		return errs.New(errs.Invalid, "token id: %d hexadecimal digits, as the listing shows", 2*tokenIDBytes)
	}
	if err := s.tokensReady(); err != nil {
		return err
	}
	lower := ident.Fold(username)
	res, err := s.r.Propose(ctx, s.r.PartitionOf(lower), "", EncodeRevokeToken(RevokeToken{Username: lower, ID: id}))
	if err != nil {
		return fmt.Errorf("account: revoke token: %w", err)
	}
	digest, err := decodeRevokeTokenResult(res)
	if err != nil {
		return err
	}
	if s.cache != nil {
		s.cache.forget(digest)
	}
	s.uses.forget(digest)
	return nil
}

// tokensReady refuses token commands until every node of the cluster
// speaks TokenProtocol (compat.Require).
func (s *Service) tokensReady() error {
	return compat.Require(s.cfg.ClusterProtocol, TokenProtocol, "API tokens")
}

// checkTokenName validates a token's name.
func checkTokenName(name string) error {
	if name == "" || len(name) > MaxTokenName {
		return errs.New(errs.Invalid, "name: give the token a name of 1 to %d bytes", MaxTokenName)
	}
	if err := text.Check(name, text.Line); err != nil {
		return errs.New(errs.Invalid, "name: %v", err)
	}
	return nil
}

func newTokenID(rnd io.Reader) (string, error) {
	var b [tokenIDBytes]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("account: read random token id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func validTokenID(id string) bool {
	if len(id) != 2*tokenIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
