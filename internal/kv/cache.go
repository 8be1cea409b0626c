package kv

import (
	"encoding/binary"

	"github.com/parley-chat/parley/internal/state"
)

// cacheBudget bounds one generation of a partition's applyCache, in
// approximate bytes.
const cacheBudget = 1 << 20

// applyCache keeps, for one partition, what Apply reads on every write
// without a Pebble seek each: the partition's revision and, for keys
// written lately, the record header and the revisions of the key's history
// entries. It is a memo of the state, not a second state: every entry it
// holds answers exactly as the stored keys would (every write of a record,
// a history entry or the revision goes through revWriter, which updates
// both), and a key it does not hold is read from the state. So replicas
// apply identically whatever each one's cache holds, and what it evicts
// changes nothing but speed. It must be dropped (reset) whenever the state
// is replaced under it: the engine does so when the group opens and after a
// snapshot (state.Resetter).
//
// On its first use after a reset it loads the partition's whole kv state
// (records and history) when that fits in the budget: it is then complete,
// and a key it does not hold has neither record nor history, so even a
// new key costs no read. It stays complete until it first evicts.
//
// Its keys live in a state.Memo: two generations under a byte budget.
type applyCache struct {
	rev      uint64 // the partition's revision, when revKnown
	revKnown bool
	loaded   bool // load ran since the last reset
	complete bool // every key with a record or history is held
	keys     *state.Memo[*keyState]
	budget   int
}

// keyState is what an applyCache knows of one key.
type keyState struct {
	h     header // the record's header when found
	found bool
	// revs are the revisions of the key's history entries, ascending, when
	// revsKnown.
	revs      []uint64
	revsKnown bool
}

func newApplyCache(budget int) *applyCache {
	return &applyCache{keys: state.NewMemo[*keyState](budget), budget: budget}
}

// reset forgets everything (the state was replaced).
func (c *applyCache) reset() { *c = *newApplyCache(c.budget) }

// peek returns key's entry if the cache holds it, nil otherwise.
func (c *applyCache) peek(key string) *keyState {
	ks, _ := c.keys.Get(key)
	return ks
}

// add holds ks; a generation dropped to make room leaves the cache
// incomplete.
func (c *applyCache) add(key string, ks *keyState) {
	if c.keys.Put(key, ks, 96+len(key)+8*cap(ks.revs)) {
		c.complete = false
	}
}

// forget drops key's entry (the cache is no longer complete).
func (c *applyCache) forget(key string) {
	c.keys.Delete(key)
	c.complete = false
}

// keyState returns key's entry, reading its header from r when the cache
// does not hold it.
func (c *applyCache) keyState(r state.Reader, key string) (*keyState, error) {
	if ks := c.peek(key); ks != nil {
		return ks, nil
	}
	if c.complete {
		ks := &keyState{revsKnown: true}
		c.add(key, ks)
		return ks, nil
	}
	h, found, err := readHeader(r, key)
	if err != nil {
		return nil, err
	}
	ks := &keyState{h: h, found: found}
	c.add(key, ks)
	return ks, nil
}

// historyRevs returns ks's history revisions (of key), reading them from r
// the first time.
func (c *applyCache) historyRevs(r state.Reader, key string, ks *keyState) ([]uint64, error) {
	if ks.revsKnown {
		return ks.revs, nil
	}
	revs, err := readHistoryRevs(r, key)
	if err != nil {
		return nil, err
	}
	ks.revs, ks.revsKnown = revs, true
	c.keys.Charge(8 * cap(revs))
	return revs, nil
}

// readHistoryRevs returns the revisions of key's stored history entries,
// ascending.
func readHistoryRevs(r state.Reader, key string) ([]uint64, error) {
	lo := historyKeyPrefix(key)
	var revs []uint64
	err := r.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
		revs = append(revs, binary.BigEndian.Uint64(k[len(k)-8:]))
		return true
	})
	return revs, err
}

// load fills the cache with every record header and history revision of
// the partition, once after each reset, if they fit in the budget; if they
// do not (or a stored key or record is corrupt: the reads that need it
// report it), it leaves the cache empty and incomplete.
func (c *applyCache) load(r state.Reader) error {
	if c.loaded {
		return nil
	}
	c.loaded = true
	fits := true
	lo := []byte(dataPrefix)
	err := r.Scan(lo, state.PrefixEnd(lo), func(k, v []byte) bool {
		h, _, err := decodeRecord(k, v)
		fits = err == nil && !c.keys.Full()
		if fits {
			c.add(string(k[len(dataPrefix):]), &keyState{h: h, found: true, revsKnown: true})
		}
		return fits
	})
	if err == nil && fits {
		lo = []byte(historyPrefix)
		err = r.Scan(lo, state.PrefixEnd(lo), func(k, _ []byte) bool {
			fits = !c.keys.Full() && c.loadHistoryKey(k[len(historyPrefix):])
			return fits
		})
	}
	if err != nil || !fits {
		c.reset()
		c.loaded = true
		return err
	}
	c.complete = true
	return nil
}

// loadHistoryKey adds the revision of one stored history key (without its
// prefix: uvarint key length, key, revision) to its key's entry; false if
// the key is malformed.
func (c *applyCache) loadHistoryKey(k []byte) bool {
	n, m := binary.Uvarint(k)
	if m <= 0 || n == 0 || uint64(len(k)-m) != n+8 {
		return false
	}
	key := string(k[m : m+int(n)])
	ks := c.peek(key)
	if ks == nil {
		ks = &keyState{revsKnown: true}
		c.add(key, ks)
	}
	ks.revs = append(ks.revs, binary.BigEndian.Uint64(k[len(k)-8:]))
	c.keys.Charge(8)
	return true
}
