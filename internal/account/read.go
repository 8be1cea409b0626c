package account

import (
	"github.com/parley-chat/parley/internal/state"
)

// AdminHolder returns the lowercased name holding the admin seat in the
// partition of AdminClaimRoutingKey, "" when the seat is free.
func AdminHolder(r state.Reader) (string, error) {
	v, found, err := r.Get([]byte(keyAdminClaim))
	if err != nil || !found {
		return "", err
	}
	return string(v), nil
}

// getUser reads the user with the lowercased name.
func getUser(r state.Reader, lower string) (userRecord, bool, error) {
	rec, found, err := r.Get(userKey(lower))
	if err != nil || !found {
		return userRecord{}, false, err
	}
	u, err := decodeUser(rec)
	return u, err == nil, err
}

// getSession reads the session stored under digest and its user's current
// name and admin flag; the zero value means no such session.
func getSession(r state.Reader, digest [TokenHashLen]byte) (cachedSession, error) {
	rec, found, err := r.Get(sessionKey(digest))
	if err != nil || !found {
		return cachedSession{}, err
	}
	s, err := decodeSession(rec)
	if err != nil {
		return cachedSession{}, err
	}
	u, found, err := getUser(r, s.username)
	if err != nil || !found {
		return cachedSession{}, err
	}
	return cachedSession{username: u.name, admin: u.admin, expiresMs: s.expiresMs}, nil
}

// getToken reads the token stored under digest.
func getToken(r state.Reader, digest [TokenHashLen]byte) (tokenRecord, bool, error) {
	rec, found, err := r.Get(tokenKey(digest))
	if err != nil || !found {
		return tokenRecord{}, false, err
	}
	t, err := decodeToken(rec)
	return t, err == nil, err
}

// getAPIToken reads the personal API token stored under digest with its
// owner's current name and admin flag, as Session caches it; the zero
// value means no such token.
func getAPIToken(r state.Reader, digest [TokenHashLen]byte) (cachedSession, error) {
	t, found, err := getToken(r, digest)
	if err != nil || !found {
		return cachedSession{}, err
	}
	u, found, err := getUser(r, t.username)
	if err != nil || !found {
		return cachedSession{}, err
	}
	return cachedSession{username: u.name, admin: u.admin, expiresMs: t.expiresMs, tokenID: t.id, scopes: t.scopes}, nil
}

// listTokens reads every token of the lowercased user, in id order.
func listTokens(r state.Reader, lower string) ([]tokenRecord, error) {
	var digests [][TokenHashLen]byte
	lo := userTokensPrefix(lower)
	err := r.Scan(lo, state.PrefixEnd(lo), func(_, v []byte) bool {
		if len(v) == TokenHashLen {
			digests = append(digests, [TokenHashLen]byte(v))
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	out := make([]tokenRecord, 0, len(digests))
	for _, d := range digests {
		t, found, err := getToken(r, d)
		if err != nil {
			return nil, err
		}
		if found {
			out = append(out, t)
		}
	}
	return out, nil
}
