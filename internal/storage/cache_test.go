package storage

import "testing"

func TestEntryCache_Append(t *testing.T) {
	type step struct {
		lo, hi  uint64 // append makeEntries(lo, hi); hi < lo means dropThrough(lo)
		first   uint64 // expected first cached index after the step (0 = empty)
		entries int
	}
	cases := []struct {
		name       string
		maxEntries int
		maxBytes   uint64
		steps      []step
	}{
		{"grows then evicts by count", 4, 1 << 20, []step{{1, 3, 1, 3}, {4, 6, 3, 4}, {7, 7, 4, 4}}},
		{"conflicting suffix replaces the tail", 10, 1 << 20, []step{{1, 8, 1, 8}, {5, 6, 1, 6}}},
		{"rewrite before the cache resets it", 3, 1 << 20, []step{{1, 6, 4, 3}, {2, 3, 2, 2}}},
		{"oversized append keeps the newest", 3, 1 << 20, []step{{1, 10, 8, 3}}},
		{"byte bound", 100, 300, []step{{2, 4, 3, 2}}}, // encoded sizes 80, 117 and 157 bytes
		{"drop through", 10, 1 << 20, []step{{1, 5, 1, 5}, {3, 0, 4, 2}, {9, 0, 0, 0}}},
		{"disabled", 0, 0, []step{{1, 5, 0, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := entryCache{maxEntries: tc.maxEntries, maxBytes: tc.maxBytes}
			for i, s := range tc.steps {
				if s.hi < s.lo {
					c.dropThrough(s.lo)
				} else {
					c.append(makeEntries(s.lo, s.hi, 1))
				}
				var size uint64
				for j := range c.ents {
					size += uint64(c.ents[j].Size())
					if j > 0 && c.ents[j].Index != c.ents[j-1].Index+1 {
						t.Fatalf("step %d: cache not contiguous", i)
					}
				}
				if c.first() != s.first || len(c.ents) != s.entries || size != c.bytes {
					t.Fatalf("step %d: first %d, %d entries, bytes %d (counted %d); want first %d, %d entries",
						i, c.first(), len(c.ents), c.bytes, size, s.first, s.entries)
				}
				if len(c.ents) > tc.maxEntries || c.bytes > tc.maxBytes {
					t.Fatalf("step %d: cache over its bounds", i)
				}
			}
		})
	}
}

func TestEntryCache_Slice(t *testing.T) {
	c := entryCache{maxEntries: 100, maxBytes: 1 << 20}
	c.append(makeEntries(10, 20, 1))
	got, size := c.slice(12, 15, 1<<20, 0, 0)
	if len(got) != 3 || got[0].Index != 12 || cap(got) != 3 {
		t.Fatalf("slice = %d entries from %d, cap %d", len(got), got[0].Index, cap(got))
	}
	if want := uint64(got[0].Size() + got[1].Size() + got[2].Size()); size != want {
		t.Fatalf("size = %d; want %d", size, want)
	}
	if got, _ := c.slice(12, 15, 0, 0, 0); len(got) != 1 {
		t.Fatalf("slice with maxSize 0 = %d entries; want 1", len(got))
	}
	if got, _ := c.slice(12, 15, 0, 10, 1); len(got) != 0 {
		t.Fatalf("continuing slice over the limit = %d entries; want 0", len(got))
	}
	if e, ok := c.lookup(20); !ok || e.Index != 20 {
		t.Fatal("lookup(20) missed")
	}
	for _, i := range []uint64{9, 21} {
		if _, ok := c.lookup(i); ok {
			t.Fatalf("lookup(%d) hit", i)
		}
	}
}
