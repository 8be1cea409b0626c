package multiraft

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

func fingerprint(b byte) []byte { return bytes.Repeat([]byte{b}, FingerprintSize) }

// A client idempotency key reused for another request (another
// fingerprint) is refused and changes nothing; a retry of the first request
// gets its result again; a result recorded before fingerprints were checked
// answers a checked retry of the same key.
func TestEngine_CheckedIdempotencyKey(t *testing.T) {
	tn := newTestNet(t, 3, 0)
	first := CheckedClientProposalID("alice/k1", fingerprint(1))
	total, err := tn.proposeAt(first, 5)
	if err != nil || total != 5 {
		t.Fatalf("first request: %d, %v", total, err)
	}
	if again, err := tn.proposeAt(first, 5); err != nil || again != 5 {
		t.Fatalf("retry: %d, %v; want the first result, 5", again, err)
	}
	_, err = tn.proposeAt(CheckedClientProposalID("alice/k1", fingerprint(2)), 7)
	if e, ok := errors.AsType[*errs.Error](err); !ok || e.Code != errs.IdempotencyKeyReused {
		t.Fatalf("another request with the same key: %v; want %s", err, errs.IdempotencyKeyReused)
	}
	if next := tn.propose(NewProposalID(), 1); next != 6 {
		t.Fatalf("total after the refused request = %d, want 6 (5 + 1): the refused one applied", next)
	}
	// Another key, and a key of another length that shares a prefix, are free.
	for _, key := range []string{"alice/k2", "alice/k1x", "alice/k"} {
		if _, err := tn.proposeAt(CheckedClientProposalID(key, fingerprint(2)), 1); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
	}
	// Recorded unchecked (an older build proposed it), retried checked.
	legacy, err := tn.proposeAt(ClientProposalID("bob/k"), 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tn.proposeAt(CheckedClientProposalID("bob/k", fingerprint(9)), 10); err != nil || got != legacy {
		t.Fatalf("checked retry of an unchecked request: %d, %v; want %d", got, err, legacy)
	}
	// Recorded checked, retried unchecked (a node that did not yet know every
	// node checks): the first result, applied once.
	checked, err := tn.proposeAt(CheckedClientProposalID("cat/k", fingerprint(3)), 20)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tn.proposeAt(ClientProposalID("cat/k"), 20); err != nil || got != checked {
		t.Fatalf("unchecked retry of a checked request: %d, %v; want %d", got, err, checked)
	}
	if next := tn.propose(NewProposalID(), 1); next != checked+1 {
		t.Fatalf("total = %d, want %d: the unchecked retry applied again", next, checked+1)
	}
	// Every replica refused alike: once each has applied what the leader
	// had, their states agree.
	applied := tn.leader().Applied(1)
	for _, e := range tn.net.engines {
		for e.Applied(1) < applied {
			time.Sleep(5 * time.Millisecond)
		}
	}
	want, _, _ := tn.dbs["n1"].State(1).Get([]byte("n"))
	for name := range tn.net.engines {
		if got, _, _ := tn.dbs[name].State(1).Get([]byte("n")); !bytes.Equal(got, want) {
			t.Fatalf("%s holds %v, n1 %v", name, got, want)
		}
	}
}

// The refusal is decided from the stored records alone: a cache loaded from
// the state (a restart, a snapshot) answers as the one built by applying,
// and once the first request's record expired, the key is free again.
func TestDedupCache_CheckedIDsReload(t *testing.T) {
	mem := state.NewMem()
	c, err := loadDedupCache(mem)
	if err != nil {
		t.Fatal(err)
	}
	a, b := CheckedClientProposalID("u/k", fingerprint(1)), CheckedClientProposalID("u/k", fingerprint(2))
	if err := c.record(mem, a, 1000, 500, []byte("r")); err != nil {
		t.Fatal(err)
	}
	reloaded, err := loadDedupCache(mem)
	if err != nil {
		t.Fatal(err)
	}
	for name, cache := range map[string]*dedupCache{"built": c, "reloaded": reloaded} {
		if rec, reused := cache.lookupChecked(a, 1200); reused || !bytes.Equal(rec, a) {
			t.Errorf("%s: the same request: recorded %q, reused %v", name, rec, reused)
		}
		if rec, reused := cache.lookupChecked(b, 1200); !reused || rec != nil {
			t.Errorf("%s: another request within the window: recorded %q, reused %v; want refused", name, rec, reused)
		}
		if rec, reused := cache.lookupChecked(b, 1600); reused || rec != nil {
			t.Errorf("%s: another request after the window: recorded %q, reused %v; want applied", name, rec, reused)
		}
	}
	if err := c.expire(mem, 1600, maxExpiredPerApply); err != nil {
		t.Fatal(err)
	}
	if len(c.keyed) != 0 {
		t.Fatalf("expired records still listed: %v", c.keyed)
	}
}

func FuzzSplitCheckedID(f *testing.F) {
	f.Add(CheckedClientProposalID("u/k", fingerprint(1)))
	f.Add([]byte("C\x00"))
	f.Add(ClientProposalID("u/k"))
	f.Fuzz(func(t *testing.T, id []byte) {
		key, legacy, ok := splitCheckedID(id)
		if !ok {
			return
		}
		dk := string(legacy[1:])
		if got := CheckedClientProposalID(dk, id[len(key):]); !bytes.Equal(got, id) {
			t.Fatalf("split %q and built again: %q", id, got)
		}
	})
}
