package presence

import (
	"fmt"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// StateMachine applies presence commands to one partition's state. It has
// no fields: everything it needs is in the command, the meta and the state.
type StateMachine struct{}

var _ state.Applier = StateMachine{}

// Apply implements state.Applier. A command that does not decode yields an
// invalid result and changes nothing; an error means the state could not be
// read or written, or a stored lease is corrupt.
func (StateMachine) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	c, err := DecodeCommand(cmd)
	if err != nil {
		return invalidResult(err), nil
	}
	switch c := c.(type) {
	case Renew:
		return applyRenew(w, meta, c)
	case Release:
		return applyRelease(w, c)
	case Expire:
		return applyExpire(w, meta, c)
	default:
		return invalidResult(fmt.Errorf("presence: unhandled command %T", c)), nil
	}
}

// applyRenew sets every lease of the command to expire TTLMs after the
// leader-stamped time.
func applyRenew(w state.Writer, meta state.Meta, c Renew) ([]byte, error) {
	expires := meta.TimeMs + int64(c.TTLMs)
	for _, u := range c.Users {
		if err := w.Set(leaseKey(ident.Fold(u), c.Node), encodeRecord(record{expiresMs: expires, name: u})); err != nil {
			return nil, fmt.Errorf("presence: renew %q on %q: %w", u, c.Node, err)
		}
	}
	return countResult(uint64(len(c.Users))), nil
}

// applyRelease deletes the command node's leases of its users.
func applyRelease(w state.Writer, c Release) ([]byte, error) {
	var ended uint64
	for _, u := range c.Users {
		k := leaseKey(ident.Fold(u), c.Node)
		_, found, err := w.Get(k)
		if err != nil {
			return nil, fmt.Errorf("presence: read lease of %q on %q: %w", u, c.Node, err)
		}
		if !found {
			continue
		}
		if err := w.Delete(k); err != nil {
			return nil, fmt.Errorf("presence: release %q on %q: %w", u, c.Node, err)
		}
		ended++
	}
	return countResult(ended), nil
}

// applyExpire deletes up to Limit leases that expired at or before the
// leader-stamped time.
func applyExpire(w state.Writer, meta state.Meta, c Expire) ([]byte, error) {
	var expired [][]byte
	more := false
	var bad error
	lo := []byte(prefixLease)
	err := w.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		rec, err := decodeRecord(v)
		if err != nil {
			bad = fmt.Errorf("%w (key %q)", err, k)
			return false
		}
		if rec.expiresMs > meta.TimeMs {
			return true
		}
		if uint64(len(expired)) == c.Limit {
			more = true
			return false
		}
		expired = append(expired, append([]byte(nil), k...))
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, fmt.Errorf("presence: scan leases: %w", err)
	}
	for _, k := range expired {
		if err := w.Delete(k); err != nil {
			return nil, fmt.Errorf("presence: expire lease %q: %w", k, err)
		}
	}
	return expireResult(uint64(len(expired)), more), nil
}
