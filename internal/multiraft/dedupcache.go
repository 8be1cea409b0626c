package multiraft

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parley-chat/parley/internal/state"
)

// dedupCache mirrors a group's dedup records (id -> expiry, and where the
// record is stored) exactly, so Apply answers "was this id applied within
// its window?" and finds expired records without reading Pebble. It is
// rebuilt from the state when the group opens and after a snapshot replaced
// the state; every change to the records goes through it, so it always
// answers as the stored records would.
type dedupCache struct {
	records map[string]dedupEntry
	order   expiryHeap // by (expiry, id): the order of the stored expiry keys
	// keyed lists, per client key of checked ids (CheckedClientProposalID),
	// the ids with a record: the same request's fingerprint, or another's.
	keyed map[string][]string
	// rule is the expiry rule in force (dedup.go), stored at keyDedupRule.
	rule byte
}

// dedupEntry is what the cache knows of one id's record: when it expires,
// and whether it is inline (rule 3: one key under prefixDedupExp holding
// the result) or split (rules 1 and 2: the result under prefixDedup, an
// empty index key under prefixDedupExp).
type dedupEntry struct {
	expiry int64
	inline bool
}

type expiryItem struct {
	expiry int64
	id     string
}

type expiryHeap []expiryItem

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(i, j int) bool {
	if h[i].expiry != h[j].expiry {
		return h[i].expiry < h[j].expiry
	}
	return h[i].id < h[j].id
}
func (h expiryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)   { *h = append(*h, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// loadDedupCache reads every stored dedup record of a group: the map from
// the split records and the inline ones, the heap from every key under
// prefixDedupExp (which may still hold keys of records that were
// re-recorded, exactly as every other replica's does).
func loadDedupCache(r state.Reader) (*dedupCache, error) {
	c := &dedupCache{records: map[string]dedupEntry{}, keyed: map[string][]string{}}
	err := r.Scan(prefixDedup, state.PrefixEnd(prefixDedup), func(k, v []byte) bool {
		if exp, n := binary.Varint(v); n > 0 {
			id := k[len(prefixDedup):]
			c.records[string(id)] = dedupEntry{expiry: exp}
			c.addKeyed(id)
		}
		return true
	})
	if err == nil {
		err = r.Scan(prefixDedupExp, state.PrefixEnd(prefixDedupExp), func(k, v []byte) bool {
			rest := k[len(prefixDedupExp):]
			if len(rest) < 8 {
				return true
			}
			it := expiryItem{expiry: int64(binary.BigEndian.Uint64(rest)), id: string(rest[8:])}
			c.order = append(c.order, it)
			if len(v) > 0 && v[0] == dedupInlineTag {
				// Keys come in expiry order: a re-recorded id's latest
				// record wins, its earlier key stays in the heap only.
				c.records[it.id] = dedupEntry{expiry: it.expiry, inline: true}
				c.addKeyed([]byte(it.id))
			}
			return true
		})
	}
	if err != nil {
		return nil, fmt.Errorf("load dedup records: %w", err)
	}
	heap.Init(&c.order)
	c.rule = 1
	if v, ok, err := r.Get(keyDedupRule); err != nil {
		return nil, fmt.Errorf("load dedup rule: %w", err)
	} else if ok && len(v) == 1 {
		c.rule = v[0]
	}
	return c, nil
}

// lookup reports whether id has a record that has not expired at nowMs.
func (c *dedupCache) lookup(id []byte, nowMs int64) bool {
	r, ok := c.records[string(id)]
	return ok && r.expiry >= nowMs
}

// result returns the result recorded for id, which has a live record
// (lookupChecked named it).
func (c *dedupCache) result(r state.Reader, id []byte) ([]byte, error) {
	rec, ok := c.records[string(id)]
	if !ok {
		return nil, fmt.Errorf("multiraft: no dedup record of a looked-up id")
	}
	if !rec.inline {
		return splitResult(r, id)
	}
	v, found, err := r.Get(dedupExpKey(rec.expiry, id))
	if err != nil {
		return nil, err
	}
	if !found || len(v) == 0 || v[0] != dedupInlineTag {
		return nil, fmt.Errorf("multiraft: corrupt or missing inline dedup record")
	}
	return v[1:], nil
}

// lookupChecked answers for a proposal id what Apply does with it. recorded
// names the record whose result it returns: id's own; for a checked id
// (CheckedClientProposalID), the record of the same client key proposed
// unchecked (before an upgrade); for an unchecked client id, the record of
// the same key proposed checked (a node that, for a moment, did not know
// every node speaks IdempotencyCheckProtocol: a restarted member not yet
// heard from). reused says a checked id's client key has a live record of
// another request: the command is refused. Both empty: apply it. At most one
// record of a key is live (another request is refused while it is), so the
// answer never depends on the order of keyed.
func (c *dedupCache) lookupChecked(id []byte, nowMs int64) (recorded []byte, reused bool) {
	if c.lookup(id, nowMs) {
		return id, false
	}
	if checked, ok := checkedKeyOf(id); ok {
		for _, other := range c.keyed[string(checked)] {
			if c.records[other].expiry >= nowMs {
				return []byte(other), false
			}
		}
		return nil, false
	}
	key, legacy, ok := splitCheckedID(id)
	if !ok {
		return nil, false
	}
	if c.lookup(legacy, nowMs) {
		return legacy, false
	}
	for _, other := range c.keyed[string(key)] {
		if other != string(id) && c.records[other].expiry >= nowMs {
			return nil, true
		}
	}
	return nil, false
}

// addKeyed lists a checked id under its client key.
func (c *dedupCache) addKeyed(id []byte) {
	key, _, ok := splitCheckedID(id)
	if !ok || slices.Contains(c.keyed[string(key)], string(id)) {
		return
	}
	c.keyed[string(key)] = append(c.keyed[string(key)], string(id))
}

// dropKeyed removes a checked id from its client key's list.
func (c *dedupCache) dropKeyed(id []byte) {
	key, _, ok := splitCheckedID(id)
	if !ok {
		return
	}
	ids := slices.DeleteFunc(c.keyed[string(key)], func(s string) bool { return s == string(id) })
	if len(ids) == 0 {
		delete(c.keyed, string(key))
	} else {
		c.keyed[string(key)] = ids
	}
}

// record stores id's result until nowMs+windowMs, in the state and here:
// under rule 3 as one inline key, before it split.
func (c *dedupCache) record(w state.Writer, id []byte, nowMs, windowMs int64, result []byte) error {
	exp := nowMs + windowMs
	inline := c.rule >= dedupRuleInline
	if inline {
		// A re-recorded id (its earlier record had expired) keeps its
		// earlier expiry key until that key's own expiry pops it, as under
		// rule 2, so that a cache loaded from the state holds the same
		// heap (expire's limit counts every item). A split record's by-id
		// key goes now: nothing else would delete it.
		if old, ok := c.records[string(id)]; ok && !old.inline {
			if err := w.Delete(dedupKey(id)); err != nil {
				return err
			}
		}
		v := make([]byte, 0, 1+len(result))
		v = append(append(v, dedupInlineTag), result...)
		if err := w.Set(dedupExpKey(exp, id), v); err != nil {
			return err
		}
	} else if err := recordDedup(w, id, nowMs, windowMs, result); err != nil {
		// Under rule 2, a re-recorded id keeps its old index key until
		// that key's own expiry pops it; the record then survives because
		// its expiry no longer matches.
		return err
	}
	c.records[string(id)] = dedupEntry{expiry: exp, inline: inline}
	c.addKeyed(id)
	heap.Push(&c.order, expiryItem{expiry: exp, id: string(id)})
	return nil
}

// expiredBefore reports whether some record expired before nowMs.
func (c *dedupCache) expiredBefore(nowMs int64) bool {
	return len(c.order) > 0 && c.order[0].expiry < nowMs
}

// setRule moves the group to rule from this index on (never back).
func (c *dedupCache) setRule(w state.Writer, rule byte) error {
	if rule <= c.rule || rule > dedupRuleLatest {
		return nil // a repeat, or a rule this build does not know: every replica of this build alike
	}
	c.rule = rule
	return w.Set(keyDedupRule, []byte{rule})
}

// expireAfter deletes expired records after the command at index applied
// at nowMs, as the rule in force says.
func (c *dedupCache) expireAfter(w state.Writer, index uint64, nowMs int64) error {
	if c.rule >= dedupRuleEager {
		return c.expire(w, nowMs, maxExpiredPerCommand)
	}
	if index%expireEvery == 0 {
		return c.expire(w, nowMs, maxExpiredPerApply)
	}
	return nil
}

// sweep deletes what a dedup sweep command deletes: under rule 2, up to
// maxExpiredPerSweep expired records; under rule 1, nothing.
func (c *dedupCache) sweep(w state.Writer, nowMs int64) error {
	if c.rule < dedupRuleEager {
		return nil
	}
	return c.expire(w, nowMs, maxExpiredPerSweep)
}

// expire deletes up to limit records that expired before nowMs, the same
// ones, in the same order, as a scan of the stored expiry index.
func (c *dedupCache) expire(w state.Writer, nowMs int64, limit int) error {
	for n := 0; n < limit && len(c.order) > 0 && c.order[0].expiry < nowMs; n++ {
		it := heap.Pop(&c.order).(expiryItem)
		id := []byte(it.id)
		if rec, ok := c.records[it.id]; ok && rec.expiry == it.expiry {
			delete(c.records, it.id)
			c.dropKeyed(id)
			if !rec.inline {
				if err := w.Delete(dedupKey(id)); err != nil {
					return err
				}
			}
		}
		if err := w.Delete(dedupExpKey(it.expiry, id)); err != nil {
			return err
		}
	}
	return nil
}
