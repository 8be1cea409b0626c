package account

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// maxPurgePerApply bounds the expired sessions one Apply deletes, so a burst
// of expiries spreads over many commands.
const maxPurgePerApply = 8

// StateMachine applies account commands to one partition's state. It has no
// fields: everything it needs is in the command, the meta and the state.
//
// Keys (relative to the partition, all under "a/"): "a/u/"+lowercased name
// holds a user, "a/s/"+token digest a session, "a/x/"+expiry+digest indexes
// sessions by expiry for purging, "a/t/"+token digest a personal API token
// and "a/k/"+lowercased name+"/"+id indexes a user's tokens
// (record_token.go), and "a/admin" (only in the partition of
// AdminClaimRoutingKey) the admin seat.
type StateMachine struct{}

var _ state.Applier = StateMachine{}

// Apply implements state.Applier. A command that does not decode yields an
// invalid result and changes nothing; an error means the state could not be
// read or written, or a stored record is corrupt. Every command that decodes
// also purges up to maxPurgePerApply sessions expired at meta.TimeMs.
func (StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return invalidResult(err), nil
	}
	if err := purgeExpired(w, meta.TimeMs, maxPurgePerApply); err != nil {
		return nil, err
	}
	switch c := c.(type) {
	case CreateUser:
		return applyCreateUser(w, meta, c)
	case ClaimAdmin:
		return applyClaimAdmin(w, c)
	case CreateSession:
		return applyCreateSession(w, meta, c)
	case DeleteSession:
		return applyDeleteSession(w, c)
	case CreateToken:
		return applyCreateToken(w, meta, c)
	case RevokeToken:
		return applyRevokeToken(w, c)
	case TouchTokens:
		return applyTouchTokens(w, c)
	default:
		return invalidResult(fmt.Errorf("account: unhandled command %T", c)), nil
	}
}

func applyCreateUser(w state.Writer, meta state.Meta, c CreateUser) ([]byte, error) {
	k := userKey(ident.Fold(c.Username))
	_, found, err := w.Get(k)
	if err != nil {
		return nil, fmt.Errorf("account: read user %q: %w", c.Username, err)
	}
	if found {
		return []byte{statusConflict}, nil
	}
	u := userRecord{name: c.Username, admin: c.Admin, createdMs: meta.TimeMs, passwordHash: c.PasswordHash}
	if err := w.Set(k, encodeUser(u)); err != nil {
		return nil, fmt.Errorf("account: create user %q: %w", c.Username, err)
	}
	return userResult(u), nil
}

func applyClaimAdmin(w state.Writer, c ClaimAdmin) ([]byte, error) {
	holder, found, err := w.Get([]byte(keyAdminClaim))
	if err != nil {
		return nil, fmt.Errorf("account: read admin claim: %w", err)
	}
	if found {
		return claimResult(string(holder)), nil
	}
	name := ident.Fold(c.Username)
	if err := w.Set([]byte(keyAdminClaim), []byte(name)); err != nil {
		return nil, fmt.Errorf("account: claim admin: %w", err)
	}
	return claimResult(name), nil
}

func applyCreateSession(w state.Writer, meta state.Meta, c CreateSession) ([]byte, error) {
	name := ident.Fold(c.Username)
	rec, found, err := w.Get(userKey(name))
	if err != nil {
		return nil, fmt.Errorf("account: read user %q: %w", name, err)
	}
	if !found {
		return []byte{statusNotFound}, nil
	}
	u, err := decodeUser(rec)
	if err != nil {
		return nil, err
	}
	// A replayed digest (a retry without dedup) replaces the old session.
	if err := deleteSession(w, c.TokenHash); err != nil {
		return nil, err
	}
	expires := meta.TimeMs + int64(min(c.TTLMs, uint64(math.MaxInt64-max(meta.TimeMs, 0))))
	s := sessionRecord{username: name, expiresMs: expires, createdMs: meta.TimeMs}
	if err := w.Set(sessionKey(c.TokenHash), encodeSession(s)); err != nil {
		return nil, fmt.Errorf("account: create session: %w", err)
	}
	if err := w.Set(sessionExpKey(expires, c.TokenHash), nil); err != nil {
		return nil, fmt.Errorf("account: index session: %w", err)
	}
	return sessionResult(u, expires), nil
}

func applyDeleteSession(w state.Writer, c DeleteSession) ([]byte, error) {
	_, found, err := w.Get(sessionKey(c.TokenHash))
	if err != nil {
		return nil, fmt.Errorf("account: read session: %w", err)
	}
	if !found {
		return []byte{statusNotFound}, nil
	}
	if err := deleteSession(w, c.TokenHash); err != nil {
		return nil, err
	}
	return []byte{statusOK}, nil
}

// deleteSession removes a session and its expiry index entry; a missing
// session is not an error.
func deleteSession(w state.Writer, h [TokenHashLen]byte) error {
	k := sessionKey(h)
	rec, found, err := w.Get(k)
	if err != nil || !found {
		return err
	}
	s, err := decodeSession(rec)
	if err != nil {
		return err
	}
	if err := w.Delete(sessionExpKey(s.expiresMs, h)); err != nil {
		return fmt.Errorf("account: unindex session: %w", err)
	}
	if err := w.Delete(k); err != nil {
		return fmt.Errorf("account: delete session: %w", err)
	}
	return nil
}

// purgeExpired deletes up to limit sessions that expired before nowMs, oldest
// first, with their index entries. An index entry whose session is gone or
// was replaced is deleted alone.
func purgeExpired(w state.Writer, nowMs int64, limit int) error {
	if nowMs <= 0 {
		return nil
	}
	lo := []byte(prefixSessionExp)
	hi := binary.BigEndian.AppendUint64([]byte(prefixSessionExp), uint64(nowMs))
	var expired [][]byte
	err := w.Scan(lo, hi, func(k, _ []byte) bool {
		expired = append(expired, append([]byte(nil), k...))
		return len(expired) < limit
	})
	if err != nil {
		return fmt.Errorf("account: scan expired sessions: %w", err)
	}
	for _, k := range expired {
		if err := w.Delete(k); err != nil {
			return fmt.Errorf("account: unindex session: %w", err)
		}
		if len(k) != len(prefixSessionExp)+8+TokenHashLen {
			continue
		}
		h := [TokenHashLen]byte(k[len(prefixSessionExp)+8:])
		rec, found, err := w.Get(sessionKey(h))
		if err != nil {
			return fmt.Errorf("account: read session: %w", err)
		}
		if !found {
			continue
		}
		s, err := decodeSession(rec)
		if err != nil {
			return err
		}
		if s.expiresMs < nowMs {
			if err := w.Delete(sessionKey(h)); err != nil {
				return fmt.Errorf("account: delete session: %w", err)
			}
		}
	}
	return nil
}
