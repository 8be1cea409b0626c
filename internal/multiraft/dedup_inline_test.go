package multiraft

import (
	"bytes"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// writeCounter counts the keys a state writer is asked to set and delete.
type writeCounter struct {
	*state.Mem
	sets, deletes int
}

func (w *writeCounter) Set(k, v []byte) error { w.sets++; return w.Mem.Set(k, v) }
func (w *writeCounter) Delete(k []byte) error { w.deletes++; return w.Mem.Delete(k) }

// sameAsReloaded fails unless a cache loaded from st knows what c knows:
// the same records (expiry, form), keyed ids, rule and expiry order.
func sameAsReloaded(t *testing.T, c *dedupCache, st state.Reader) {
	t.Helper()
	r, err := loadDedupCache(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.records) != len(c.records) {
		t.Fatalf("reloaded %d records, built %d", len(r.records), len(c.records))
	}
	for id, rec := range c.records {
		if r.records[id] != rec {
			t.Fatalf("record %q: reloaded %+v, built %+v", id, r.records[id], rec)
		}
	}
	if r.rule != c.rule {
		t.Fatalf("reloaded rule %d, built %d", r.rule, c.rule)
	}
	order := func(h expiryHeap) []expiryItem {
		out := slices.Clone(h)
		slices.SortFunc(out, func(a, b expiryItem) int {
			if a.expiry != b.expiry {
				return int(a.expiry - b.expiry)
			}
			return strings.Compare(a.id, b.id)
		})
		return out
	}
	if got, want := order(r.order), order(c.order); !slices.Equal(got, want) {
		t.Fatalf("reloaded expiry order %v, built %v", got, want)
	}
	for key, ids := range c.keyed {
		if !slices.Equal(r.keyed[key], ids) {
			t.Fatalf("keyed %q: reloaded %q, built %q", key, r.keyed[key], ids)
		}
	}
}

// Records made before a group moves to rule 3 keep answering in their split
// form; records made after are one key each; a re-recorded id answers with
// its latest record; a cache reloaded from the state at any step knows
// what the one built by applying knows (the same heap: expire's limit
// counts its items); and expiry leaves no key behind.
func TestDedupCache_RuleThreeStoresOneKeyPerRecord(t *testing.T) {
	w := &writeCounter{Mem: state.NewMem()}
	c, err := loadDedupCache(w)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	answer := func(id []byte, nowMs int64, want string) {
		t.Helper()
		rec, reused := c.lookupChecked(id, nowMs)
		if reused || !bytes.Equal(rec, id) {
			t.Fatalf("%q at %d: recorded %q, reused %v", id, nowMs, rec, reused)
		}
		got, err := c.result(w, rec)
		if err != nil || string(got) != want {
			t.Fatalf("%q at %d: result %q, %v; want %q", id, nowMs, got, err, want)
		}
	}
	a, b := []byte("a-id"), []byte("b-id")
	must(c.record(w, a, 100, 50, []byte("a1")))
	must(c.record(w, b, 100, 1000, []byte("b1")))
	if w.sets != 2*2 {
		t.Fatalf("rule 1 set %d keys for 2 records, want 4", w.sets)
	}
	must(c.setRule(w, dedupRuleEager))
	must(c.setRule(w, dedupRuleInline))
	sameAsReloaded(t, c, w)

	w.sets = 0
	cid := CheckedClientProposalID("u/k", fingerprint(1))
	must(c.record(w, []byte("c-id"), 200, 50, []byte("c1")))
	must(c.record(w, []byte("d-id"), 200, 50, nil)) // an empty result
	must(c.record(w, cid, 200, 500, []byte("k1")))
	if w.sets != 3 {
		t.Fatalf("rule 3 set %d keys for 3 records, want 3", w.sets)
	}
	// One inline record expiring is one deletion (a split one is two).
	one, err := loadDedupCache(state.NewMem())
	must(err)
	one.rule = dedupRuleInline
	ow := &writeCounter{Mem: state.NewMem()}
	must(one.record(ow, []byte("x"), 0, 10, nil))
	must(one.expire(ow, 100, maxExpiredPerCommand))
	if ow.deletes != 1 || ow.Len() != 0 {
		t.Fatalf("expiring an inline record deleted %d keys and left %d, want 1 and none", ow.deletes, ow.Len())
	}
	answer(b, 300, "b1") // split, from before the switch
	answer([]byte("c-id"), 210, "c1")
	answer([]byte("d-id"), 210, "")
	answer(cid, 210, "k1")
	if _, reused := c.lookupChecked(CheckedClientProposalID("u/k", fingerprint(2)), 210); !reused {
		t.Fatal("an inline record of a checked id does not refuse the same key for another request")
	}
	sameAsReloaded(t, c, w)

	// a expired at 150 and is not deleted yet: re-recorded inline, its
	// split record goes.
	must(c.record(w, a, 400, 50, []byte("a2")))
	answer(a, 410, "a2")
	if _, found, _ := w.Get(dedupKey(a)); found {
		t.Fatal("a re-recorded id keeps its split record")
	}
	sameAsReloaded(t, c, w)
	// c-id expired at 250: re-recorded, its earlier inline key stays until
	// its expiry pops it, and then deletes only itself.
	must(c.record(w, []byte("c-id"), 400, 50, []byte("c2")))
	answer([]byte("c-id"), 410, "c2")
	sameAsReloaded(t, c, w)
	must(c.expire(w, 300, 1<<20)) // pops a's and c-id's earlier keys, and d-id
	answer([]byte("c-id"), 410, "c2")
	answer(a, 410, "a2")
	if _, found, _ := w.Get(dedupExpKey(250, []byte("c-id"))); found {
		t.Fatal("a re-recorded id's earlier key outlives its expiry")
	}
	sameAsReloaded(t, c, w)

	must(c.expire(w, 1<<40, 1<<20))
	if len(c.records) != 0 || len(c.keyed) != 0 || len(c.order) != 0 {
		t.Fatalf("after every record expired the cache holds %d records, %d keyed, %d in order", len(c.records), len(c.keyed), len(c.order))
	}
	if n, err := countDedupRecords(w); err != nil || n != 0 {
		t.Fatalf("after every record expired %d are stored (%v)", n, err)
	}
	var left []string
	must(w.Scan(nil, nil, func(k, _ []byte) bool { left = append(left, string(k)); return true }))
	if !slices.Equal(left, []string{string(keyDedupRule)}) {
		t.Fatalf("keys left after every record expired: %q", left)
	}
}

// A group moves to rule 3 only once every node speaks its protocol; a
// request recorded before the move gets its first result when retried after
// it, on every replica alike, and one recorded after the move is stored as
// one key.
func TestEngine_RetryAcrossTheMoveToRuleThree(t *testing.T) {
	var protocol atomic.Int64
	protocol.Store(DedupRuleProtocol)
	tn := newTestNet(t, 3, 0, func(c *Config) { c.ClusterProtocol = func() int { return int(protocol.Load()) } })
	tn.waitDedupRule(dedupRuleEager)
	before := NewProposalID()
	first := tn.propose(before, 5)

	protocol.Store(DedupInlineProtocol)
	tn.waitDedupRule(dedupRuleInline)
	if again := tn.propose(before, 5); again != first {
		t.Fatalf("retry after the move: %d, want the first result %d", again, first)
	}
	after := NewProposalID()
	second := tn.propose(after, 3)
	if again := tn.propose(after, 3); again != second {
		t.Fatalf("retry of a request made after the move: %d, want %d", again, second)
	}
	if next := tn.propose(NewProposalID(), 1); next != second+1 {
		t.Fatalf("total %d, want %d: a retry applied again", next, second+1)
	}
	applied := tn.leader().Applied(1)
	for name, e := range tn.net.engines {
		for e.Applied(1) < applied {
			tn.propose(NewProposalID(), 0)
		}
		st := tn.dbs[name].State(1)
		if _, found, _ := st.Get(dedupKey(before)); !found {
			t.Errorf("%s: the record made before the move is not split", name)
		}
		if _, found, _ := st.Get(dedupKey(after)); found {
			t.Errorf("%s: the record made after the move is split", name)
		}
	}
}
