package account

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/parley-chat/parley/internal/state"
)

// MaxTokensPerUser bounds the personal API tokens one user holds, expired
// ones included until the next CreateToken clears them.
const MaxTokensPerUser = 100

func applyCreateToken(w state.Writer, meta state.Meta, c CreateToken) ([]byte, error) {
	u, found, err := getUser(w, c.Username)
	if err != nil {
		return nil, fmt.Errorf("account: read user %q: %w", c.Username, err)
	}
	if !found {
		return []byte{statusNotFound}, nil
	}
	if c.Scopes.Has(LevelAdmin) && !u.admin {
		return invalidResult(fmt.Errorf("only an admin may grant the admin scope")), nil
	}
	held, err := dropExpiredTokens(w, c.Username, meta.TimeMs)
	if err != nil {
		return nil, err
	}
	if held >= MaxTokensPerUser {
		return []byte{statusTooMany}, nil
	}
	for _, k := range [][]byte{userTokenKey(c.Username, c.ID), tokenKey(c.TokenHash)} {
		if _, taken, err := w.Get(k); err != nil {
			return nil, fmt.Errorf("account: read token: %w", err)
		} else if taken {
			return []byte{statusConflict}, nil
		}
	}
	t := tokenRecord{
		username: c.Username, id: c.ID, name: c.Name, scopes: c.Scopes,
		createdMs: meta.TimeMs,
		expiresMs: meta.TimeMs + int64(min(c.TTLMs, uint64(math.MaxInt64-max(meta.TimeMs, 0)))),
	}
	if err := w.Set(tokenKey(c.TokenHash), encodeToken(t)); err != nil {
		return nil, fmt.Errorf("account: create token: %w", err)
	}
	if err := w.Set(userTokenKey(c.Username, c.ID), c.TokenHash[:]); err != nil {
		return nil, fmt.Errorf("account: index token: %w", err)
	}
	return tokenResult(t), nil
}

// dropExpiredTokens deletes lower's tokens that expired by nowMs and
// returns how many it holds still.
func dropExpiredTokens(w state.Writer, lower string, nowMs int64) (int, error) {
	var digests [][TokenHashLen]byte
	var indexKeys [][]byte
	lo := userTokensPrefix(lower)
	err := w.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		if len(v) == TokenHashLen {
			digests = append(digests, [TokenHashLen]byte(v))
			indexKeys = append(indexKeys, append([]byte(nil), k...))
		}
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("account: scan tokens of %q: %w", lower, err)
	}
	held := 0
	for i, d := range digests {
		t, found, err := getToken(w, d)
		if err != nil {
			return 0, err
		}
		if found && t.expiresMs > nowMs {
			held++
			continue
		}
		if err := w.Delete(tokenKey(d)); err != nil {
			return 0, fmt.Errorf("account: delete token: %w", err)
		}
		if err := w.Delete(indexKeys[i]); err != nil {
			return 0, fmt.Errorf("account: unindex token: %w", err)
		}
	}
	return held, nil
}

func applyRevokeToken(w state.Writer, c RevokeToken) ([]byte, error) {
	k := userTokenKey(c.Username, c.ID)
	v, found, err := w.Get(k)
	if err != nil {
		return nil, fmt.Errorf("account: read token index: %w", err)
	}
	if !found {
		return []byte{statusNotFound}, nil
	}
	if len(v) != TokenHashLen {
		return nil, fmt.Errorf("account: corrupt token index entry (%d bytes)", len(v))
	}
	if err := w.Delete(tokenKey([TokenHashLen]byte(v))); err != nil {
		return nil, fmt.Errorf("account: delete token: %w", err)
	}
	if err := w.Delete(k); err != nil {
		return nil, fmt.Errorf("account: unindex token: %w", err)
	}
	return append([]byte{statusOK}, v...), nil
}

func applyTouchTokens(w state.Writer, c TouchTokens) ([]byte, error) {
	updated := 0
	for _, u := range c.Uses {
		t, found, err := getToken(w, u.TokenHash)
		if err != nil {
			return nil, err
		}
		if !found || u.AtMs <= t.lastUsedMs {
			continue
		}
		t.lastUsedMs = u.AtMs
		if err := w.Set(tokenKey(u.TokenHash), encodeToken(t)); err != nil {
			return nil, fmt.Errorf("account: touch token: %w", err)
		}
		updated++
	}
	return binary.AppendUvarint([]byte{statusOK}, uint64(updated)), nil
}
