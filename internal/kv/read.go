package kv

import (
	"github.com/parley-chat/parley/internal/state"
)

// Item is a stored value with its metadata.
type Item struct {
	Value []byte
	// Version is 1 when the key was created and grows by one with every put.
	Version uint64
	// ModifiedMs is the leader-stamped time of the last put, Unix ms.
	ModifiedMs int64
	// Revision is the partition revision of the last put (0 for a value
	// written before revisions existed).
	Revision uint64
	// ExpiresMs is when the key's TTL runs out, Unix ms by the leader's
	// clock; 0 without a TTL.
	ExpiresMs int64
	// Lease is the lease the key is attached to; 0 for none.
	Lease uint64
}

// ListItem describes one key in a listing.
type ListItem struct {
	Key        string
	Version    uint64
	ModifiedMs int64
	// Size is the value's length in bytes.
	Size int
	// Revision, ExpiresMs and Lease are as in Item.
	Revision  uint64
	ExpiresMs int64
	Lease     uint64
}

// Get reads key from a partition's state. found is false when the key does
// not exist; an error means the state could not be read or is corrupt.
func Get(r state.Reader, key string) (item Item, found bool, err error) {
	k := dataKey(key)
	rec, found, err := r.Get(k)
	if err != nil || !found {
		return Item{}, false, err
	}
	h, value, err := decodeRecord(k, rec)
	if err != nil {
		return Item{}, false, err
	}
	return Item{Value: value, Version: h.version, ModifiedMs: h.modifiedMs, Revision: h.modRev, ExpiresMs: h.expiresMs, Lease: h.lease}, true, nil
}

// List returns the keys of a partition's state that start with prefix and
// sort after after (when not empty), in ascending byte order, at most limit
// of them (no cap when limit <= 0).
func List(r state.Reader, prefix, after string, limit int) ([]ListItem, error) {
	lo := dataKey(prefix)
	hi := state.PrefixEnd(lo)
	if after != "" && after >= prefix {
		lo = append(dataKey(after), 0) // the smallest key greater than after
	}
	if hi != nil && string(lo) >= string(hi) {
		return nil, nil
	}
	var items []ListItem
	var err error
	scanErr := r.Scan(lo, hi, func(k, v []byte) bool {
		var h header
		var value []byte
		if h, value, err = decodeRecord(k, v); err != nil {
			return false
		}
		items = append(items, ListItem{
			Key:        string(k[len(dataPrefix):]),
			Version:    h.version,
			ModifiedMs: h.modifiedMs,
			Size:       len(value),
			Revision:   h.modRev,
			ExpiresMs:  h.expiresMs,
			Lease:      h.lease,
		})
		return limit <= 0 || len(items) < limit
	})
	if scanErr != nil {
		return nil, scanErr
	}
	return items, err
}
