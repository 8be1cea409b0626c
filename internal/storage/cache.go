package storage

import "go.etcd.io/raft/v3/raftpb"

// Default bounds of the per-group entry cache.
const (
	defaultCacheEntries = 1024
	defaultCacheBytes   = 4 << 20
)

// entryCache holds the most recent entries of one group's log, contiguous and ending at the
// group's last index, so that a leader replicating fresh entries rarely reads Pebble.
//
// Slots of the backing array are written at most once: truncation re-slices with a full slice
// expression so later appends reallocate. Slices handed out by Entries may therefore alias the
// cache without ever seeing an entry change under them.
type entryCache struct {
	ents       []raftpb.Entry
	bytes      uint64 // sum of Size() of ents
	maxEntries int
	maxBytes   uint64
}

// first returns the index of the first cached entry, or 0 if the cache is empty.
func (c *entryCache) first() uint64 {
	if len(c.ents) == 0 {
		return 0
	}
	return c.ents[0].Index
}

// reset empties the cache.
func (c *entryCache) reset() {
	c.ents = nil
	c.bytes = 0
}

// append adds contiguous entries that become the tail of the log: cached entries at or after
// ents[0].Index are replaced.
func (c *entryCache) append(ents []raftpb.Entry) {
	if len(ents) == 0 || c.maxEntries <= 0 {
		return
	}
	switch first := c.first(); {
	case len(c.ents) == 0, ents[0].Index < first, ents[0].Index > c.ents[len(c.ents)-1].Index+1:
		c.reset()
	case ents[0].Index <= c.ents[len(c.ents)-1].Index:
		keep := int(ents[0].Index - first)
		for i := keep; i < len(c.ents); i++ {
			c.bytes -= uint64(c.ents[i].Size())
		}
		c.ents = c.ents[:keep:keep]
	}
	if len(ents) > c.maxEntries {
		ents = ents[len(ents)-c.maxEntries:]
	}
	for i := range ents {
		c.bytes += uint64(ents[i].Size())
	}
	c.ents = append(c.ents, ents...)
	c.evict()
}

// dropThrough forgets cached entries with index <= index.
func (c *entryCache) dropThrough(index uint64) {
	n := 0
	for n < len(c.ents) && c.ents[n].Index <= index {
		c.bytes -= uint64(c.ents[n].Size())
		n++
	}
	c.ents = c.ents[n:]
	if len(c.ents) == 0 {
		c.reset()
	}
}

// evict drops the oldest entries until the cache is within its bounds.
func (c *entryCache) evict() {
	n := 0
	for n < len(c.ents) && (len(c.ents)-n > c.maxEntries || c.bytes > c.maxBytes) {
		c.bytes -= uint64(c.ents[n].Size())
		n++
	}
	if n == len(c.ents) {
		c.reset()
		return
	}
	c.ents = c.ents[n:]
}

// lookup returns the cached entry at index, if any.
func (c *entryCache) lookup(index uint64) (*raftpb.Entry, bool) {
	first := c.first()
	if first == 0 || index < first || index-first >= uint64(len(c.ents)) {
		return nil, false
	}
	return &c.ents[index-first], true
}

// slice returns cached entries [lo, hi) limited to maxSize bytes (at least one entry), continuing
// a running total size that already holds size bytes (count entries). The result aliases the
// cache with its capacity clipped, so appends by the caller reallocate.
func (c *entryCache) slice(lo, hi, maxSize, size uint64, count int) ([]raftpb.Entry, uint64) {
	first := c.first()
	ents := c.ents[lo-first : hi-first]
	n := 0
	for n < len(ents) {
		s := uint64(ents[n].Size())
		if count+n > 0 && size+s > maxSize {
			break
		}
		size += s
		n++
	}
	return ents[:n:n], size
}
