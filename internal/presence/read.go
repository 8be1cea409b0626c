package presence

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/parley-chat/parley/internal/ident"
	"github.com/parley-chat/parley/internal/state"
)

// Grace is how long after its expiry time a lease still counts as online to
// a reader: expiry times come from the leader's clock and are compared
// against the reader's, so Grace absorbs a little skew between them.
const Grace = time.Second

// Lease is one node's lease of one user.
type Lease struct {
	// User is the username as the holding node last wrote it.
	User string
	// Node is the id of the node holding the user's connections.
	Node string
	// ExpiresMs is when the lease runs out, in Unix milliseconds of the
	// leader's clock.
	ExpiresMs int64
}

// live reports whether a lease counts as online at nowMs (the reader's
// clock).
func (l Lease) live(nowMs int64) bool {
	return l.ExpiresMs+Grace.Milliseconds() > nowMs
}

// scanLeases calls fn for every lease under prefix p, in key order.
func scanLeases(r state.Reader, p []byte, fn func(lowerUser string, l Lease)) error {
	var bad error
	err := r.Scan(p, state.PrefixEnd(p), func(k, v []byte) bool {
		user, node, err := splitLeaseKey(k)
		if err != nil {
			bad = err
			return false
		}
		rec, err := decodeRecord(v)
		if err != nil {
			bad = fmt.Errorf("%w (key %q)", err, k)
			return false
		}
		fn(user, Lease{User: rec.name, Node: node, ExpiresMs: rec.expiresMs})
		return true
	})
	if err != nil {
		return fmt.Errorf("presence: scan leases: %w", err)
	}
	return bad
}

// Leases returns every lease stored in a partition, expired or not, ordered
// by user and node.
func Leases(r state.Reader) ([]Lease, error) {
	var out []Lease
	err := scanLeases(r, []byte(prefixLease), func(_ string, l Lease) { out = append(out, l) })
	return out, err
}

// Online returns the users of a partition with a live lease at nowMs (the
// reader's clock, in Unix milliseconds), once each, in case-insensitive name
// order.
func Online(r state.Reader, nowMs int64) ([]string, error) {
	type user struct{ lower, name string }
	var out []user
	err := scanLeases(r, []byte(prefixLease), func(lower string, l Lease) {
		if !l.live(nowMs) || (len(out) > 0 && out[len(out)-1].lower == lower) {
			return
		}
		out = append(out, user{lower, l.User})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b user) int { return cmp.Compare(a.lower, b.lower) })
	names := make([]string, len(out))
	for i, u := range out {
		names[i] = u.name
	}
	return names, nil
}

// IsOnline reports, for each of users (any case) that lives in this
// partition, whether it has a live lease at nowMs. The map has an entry
// for every user asked, keyed as given.
func IsOnline(r state.Reader, users []string, nowMs int64) (map[string]bool, error) {
	out := make(map[string]bool, len(users))
	for _, u := range users {
		online := false
		err := scanLeases(r, userPrefix(ident.Fold(u)), func(_ string, l Lease) {
			online = online || l.live(nowMs)
		})
		if err != nil {
			return nil, err
		}
		out[u] = online
	}
	return out, nil
}

// HasExpired reports whether a partition holds a lease that ran out at or
// before nowMs: whether an Expire command would find work.
func HasExpired(r state.Reader, nowMs int64) (bool, error) {
	found := false
	err := scanLeases(r, []byte(prefixLease), func(_ string, l Lease) {
		found = found || l.ExpiresMs <= nowMs
	})
	return found, err
}

// Change is one user going online or offline.
type Change struct {
	Username string
	Online   bool
}

// Changes returns how presence went from prev to cur, in username order: a
// user online in cur but not in prev (or absent from prev) went online; one
// online in prev but not in cur (or absent from cur) went offline. The
// stream turns each into a presence frame.
func Changes(prev, cur map[string]bool) []Change {
	var out []Change
	for u, on := range cur {
		if on != prev[u] {
			out = append(out, Change{Username: u, Online: on})
		}
	}
	for u, on := range prev {
		if _, ok := cur[u]; !ok && on {
			out = append(out, Change{Username: u, Online: false})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return cmp.Compare(a.Username, b.Username) })
	return out
}
