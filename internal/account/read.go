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
