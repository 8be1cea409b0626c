package kv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// newClocked returns a Service over one frozen-clock partition, keeping
// history versions per key.
func newClocked(t *testing.T, partitions, history int) (*kv.Service, *statetest.Replicator) {
	t.Helper()
	r := statetest.NewReplicator(partitions, kv.StateMachine{})
	r.Freeze(time.UnixMilli(1_000_000))
	return kv.NewService(r, kv.Limits{MaxKey: 64, MaxValue: 64, History: history}), r
}

func mustPutWith(t *testing.T, s *kv.Service, key, value string, opt kv.PutOptions) kv.Written {
	t.Helper()
	w, err := s.PutWith(context.Background(), "alice", key, []byte(value), opt)
	if err != nil {
		t.Fatalf("PutWith(%q): %v", key, err)
	}
	return w
}

// events reads partition p's events after rev that m selects.
func events(t *testing.T, r *statetest.Replicator, p, after uint64, m kv.Match) ([]kv.Event, uint64, error) {
	t.Helper()
	var evs []kv.Event
	var upTo uint64
	var ferr error
	_, err := r.Read(context.Background(), p, true, func(rd state.Reader) error {
		evs, upTo, ferr = kv.EventsAfter(rd, after, m, 1000)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs, upTo, ferr
}

func TestService_Revisions(t *testing.T) {
	ctx := context.Background()
	s, r := newClocked(t, 1, 3)
	w1 := mustPutWith(t, s, "a", "1", kv.PutOptions{})
	w2 := mustPutWith(t, s, "b", "1", kv.PutOptions{})
	w3 := mustPutWith(t, s, "a", "2", kv.PutOptions{})
	if w1.Revision != 1 || w2.Revision != 2 || w3.Revision != 3 || w3.Version != 2 {
		t.Fatalf("writes = %+v %+v %+v, want revisions 1,2,3", w1, w2, w3)
	}
	if err := s.Delete(ctx, "alice", "b", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Run("get at a revision", func(t *testing.T) {
		for _, tc := range []struct {
			key  string
			rev  uint64
			want string
			code errs.Code
		}{
			{"a", 1, "1", ""}, {"a", 2, "1", ""}, {"a", 3, "2", ""}, {"a", 4, "2", ""},
			{"b", 1, "", errs.NotFound}, {"b", 2, "1", ""}, {"b", 4, "", errs.NotFound},
			{"a", 5, "", errs.Invalid}, {"nope", 2, "", errs.NotFound},
		} {
			it, err := s.GetAt(ctx, tc.key, tc.rev)
			if errs.CodeOf(err) != tc.code || string(it.Value) != tc.want {
				t.Errorf("GetAt(%q, %d) = (%q, %v), want (%q, %q)", tc.key, tc.rev, it.Value, err, tc.want, tc.code)
			}
		}
	})
	t.Run("history of a key", func(t *testing.T) {
		h, rev, err := s.History(ctx, "b")
		if err != nil || rev != 4 || len(h) != 2 || h[0].Type != kv.EventPut || h[1].Type != kv.EventDelete || h[1].Version != 1 {
			t.Fatalf("History(b) = %+v, %d, %v", h, rev, err)
		}
	})
	t.Run("events in revision order", func(t *testing.T) {
		evs, upTo, err := events(t, r, 1, 0, kv.Match{})
		if err != nil || upTo != 4 || len(evs) != 4 {
			t.Fatalf("EventsAfter = %+v, %d, %v", evs, upTo, err)
		}
		want := []string{"put a 1", "put b 1", "put a 2", "delete b 1"}
		for i, e := range evs {
			if got := fmt.Sprintf("%s %s %d", e.Type, e.Key, e.Version); got != want[i] || e.Revision != uint64(i+1) {
				t.Errorf("event %d = %q at %d, want %q at %d", i, got, e.Revision, want[i], i+1)
			}
		}
		evs, upTo, err = events(t, r, 1, 1, kv.Match{Key: "a"})
		if err != nil || upTo != 4 || len(evs) != 1 || evs[0].Revision != 3 {
			t.Fatalf("EventsAfter(key a, after 1) = %+v, %d, %v", evs, upTo, err)
		}
	})
}

func TestService_HistoryTrimmedBeyondWindow(t *testing.T) {
	ctx := context.Background()
	s, r := newClocked(t, 1, 2)
	for i := range kv.Window + 10 {
		mustPutWith(t, s, "hot", fmt.Sprint(i), kv.PutOptions{})
	}
	h, _, err := s.History(ctx, "hot")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) > kv.Window+2 || len(h) < kv.Window {
		t.Fatalf("history keeps %d versions, want the window (%d) and 2", len(h), kv.Window)
	}
	if _, err := s.GetAt(ctx, "hot", 1); errs.CodeOf(err) != errs.HistoryCompacted {
		t.Fatalf("GetAt(first revision) = %v, want history_compacted", err)
	}
	if _, _, err := events(t, r, 1, 0, kv.Match{}); errs.CodeOf(err) != errs.HistoryCompacted {
		t.Fatalf("EventsAfter(0) = %v, want history_compacted", err)
	}
	if evs, _, err := events(t, r, 1, 40, kv.Match{}); err != nil || len(evs) != kv.Window+10-40 {
		t.Fatalf("EventsAfter(20) = %d events, %v", len(evs), err)
	}
}

func TestService_TTL(t *testing.T) {
	ctx := context.Background()
	s, r := newClocked(t, 1, 10)
	mustPutWith(t, s, "t", "v", kv.PutOptions{TTL: 2 * time.Second})
	mustPutWith(t, s, "keep", "v", kv.PutOptions{})
	if n, err := s.Expire(ctx, 1); err != nil || n != 0 {
		t.Fatalf("Expire before the TTL = %d, %v", n, err)
	}
	r.Advance(2 * time.Second)
	if n, err := s.Expire(ctx, 1); err != nil || n != 1 {
		t.Fatalf("Expire after the TTL = %d, %v", n, err)
	}
	if _, _, err := s.Get(ctx, "t", false); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("Get(expired) = %v", err)
	}
	if _, _, err := s.Get(ctx, "keep", false); err != nil {
		t.Fatalf("Get(keep) = %v", err)
	}
	evs, _, _ := events(t, r, 1, 2, kv.Match{})
	if len(evs) != 1 || evs[0].Type != kv.EventExpire || evs[0].Key != "t" {
		t.Fatalf("events after expiry = %+v", evs)
	}
	t.Run("a put without ttl clears it", func(t *testing.T) {
		mustPutWith(t, s, "u", "v", kv.PutOptions{TTL: time.Second})
		mustPutWith(t, s, "u", "w", kv.PutOptions{})
		r.Advance(time.Hour)
		if n, err := s.Expire(ctx, 1); err != nil || n != 0 {
			t.Fatalf("Expire = %d, %v", n, err)
		}
	})
	t.Run("bad ttl", func(t *testing.T) {
		for _, opt := range []kv.PutOptions{{TTL: time.Millisecond}, {TTL: 10 * kv.MaxTTL}, {TTL: time.Minute, Lease: 5}} {
			if _, err := s.PutWith(ctx, "alice", "x", nil, opt); errs.CodeOf(err) != errs.Invalid {
				t.Errorf("PutWith(%+v) = %v, want invalid", opt, err)
			}
		}
	})
}

func TestService_Leases(t *testing.T) {
	ctx := context.Background()
	s, r := newClocked(t, 4, 10)
	l, err := s.Grant(ctx, 10*time.Second)
	if err != nil || l.ID == 0 || l.TTLMs != 10_000 {
		t.Fatalf("Grant = %+v, %v", l, err)
	}
	keys := []string{"svc/a", "svc/b", "svc/c", "svc/d", "svc/e"}
	for _, k := range keys {
		mustPutWith(t, s, k, "up", kv.PutOptions{Lease: l.ID})
	}
	t.Run("keep-alive moves the deadline everywhere", func(t *testing.T) {
		r.Advance(8 * time.Second)
		if _, err := s.KeepAlive(ctx, l.ID); err != nil {
			t.Fatal(err)
		}
		r.Advance(8 * time.Second)
		for _, p := range r.Partitions() {
			if n, err := s.Expire(ctx, p); err != nil || n != 0 {
				t.Fatalf("Expire(%d) after keep-alive = %d, %v", p, n, err)
			}
		}
	})
	t.Run("expiry deletes every attached key", func(t *testing.T) {
		r.Advance(3 * time.Second)
		total := 0
		for _, p := range r.Partitions() {
			n, err := s.Expire(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			total += n
		}
		if total != len(keys) {
			t.Fatalf("expired %d keys, want %d", total, len(keys))
		}
		if _, err := s.KeepAlive(ctx, l.ID); errs.CodeOf(err) != errs.NotFound {
			t.Fatalf("KeepAlive(expired) = %v", err)
		}
		if _, err := s.PutWith(ctx, "alice", "late", nil, kv.PutOptions{Lease: l.ID}); errs.CodeOf(err) != errs.NotFound {
			t.Fatalf("put on an expired lease = %v", err)
		}
	})
	t.Run("revoke deletes every attached key", func(t *testing.T) {
		l2, err := s.Grant(ctx, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			mustPutWith(t, s, k, "up", kv.PutOptions{Lease: l2.ID})
		}
		if err := s.Revoke(ctx, l2.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Revoke(ctx, l2.ID); err != nil {
			t.Fatalf("second Revoke = %v, want it to repeat the fan-out", err)
		}
		items, _, err := s.List(ctx, "svc/", "", 0, false)
		if err != nil || len(items) != 0 {
			t.Fatalf("keys left after revoke: %+v, %v", items, err)
		}
		if _, err := s.PutWith(ctx, "alice", "svc/late", nil, kv.PutOptions{Lease: l2.ID}); errs.CodeOf(err) != errs.NotFound {
			t.Fatalf("put on a revoked lease = %v", err)
		}
		if _, err := s.Lease(ctx, l2.ID); errs.CodeOf(err) != errs.NotFound {
			t.Fatalf("Lease(revoked) = %v", err)
		}
	})
	t.Run("unknown leases", func(t *testing.T) {
		for _, id := range []uint64{0, 1, 99 << kv.LeaseShift, 1<<kv.LeaseShift | 12345} {
			if err := s.Revoke(ctx, id); errs.CodeOf(err) != errs.NotFound {
				t.Errorf("Revoke(%d) = %v", id, err)
			}
		}
	})
}

func TestService_Txn(t *testing.T) {
	ctx := context.Background()
	s, _ := newClocked(t, 8, 10)
	mustPutWith(t, s, "{cart}/n", "1", kv.PutOptions{})
	put := func(k, v string) kv.TxnOp { return kv.TxnOp{Type: kv.OpPut, Key: k, Value: []byte(v)} }
	get := func(k string) kv.TxnOp { return kv.TxnOp{Type: kv.OpGet, Key: k} }
	t.Run("success branch", func(t *testing.T) {
		res, err := s.Txn(ctx, "alice", kv.TxnRequest{
			Compare: []kv.Compare{{Key: "{cart}/n", Version: 1}, {Key: "{cart}/items", Version: 0}},
			Success: []kv.TxnOp{put("{cart}/n", "2"), put("{cart}/items", "x"), get("{cart}/n")},
			Failure: []kv.TxnOp{get("{cart}/n")},
		})
		if err != nil || !res.Succeeded || len(res.Results) != 3 || string(res.Results[2].Value) != "2" || res.Results[0].Revision != res.Revision {
			t.Fatalf("Txn = %+v, %v", res, err)
		}
	})
	t.Run("failure branch", func(t *testing.T) {
		res, err := s.Txn(ctx, "alice", kv.TxnRequest{
			Compare: []kv.Compare{{Key: "{cart}/n", ByValue: true, Value: []byte("1")}},
			Success: []kv.TxnOp{put("{cart}/n", "9")},
			Failure: []kv.TxnOp{get("{cart}/n")},
		})
		if err != nil || res.Succeeded || string(res.Results[0].Value) != "2" {
			t.Fatalf("Txn = %+v, %v", res, err)
		}
	})
	t.Run("refusals change nothing", func(t *testing.T) {
		var spanning []kv.TxnOp
		for i := range 8 {
			spanning = append(spanning, put(fmt.Sprintf("k%d", i), "x"))
		}
		for _, tc := range []struct {
			name string
			req  kv.TxnRequest
			in   string
		}{
			{"spans partitions", kv.TxnRequest{Success: spanning}, "partition"},
			{"empty", kv.TxnRequest{}, "operation"},
			{"written twice", kv.TxnRequest{Success: []kv.TxnOp{put("a", "1"), put("a", "2")}}, "twice"},
			{"bad op", kv.TxnRequest{Success: []kv.TxnOp{{Type: 'Z', Key: "a"}}}, "unknown operation"},
			{"empty key", kv.TxnRequest{Success: []kv.TxnOp{put("", "1")}}, "success[0]"},
			{"delete with value", kv.TxnRequest{Success: []kv.TxnOp{{Type: kv.OpDelete, Key: "a", Value: []byte("x")}}}, "only a put"},
		} {
			_, err := s.Txn(ctx, "alice", tc.req)
			if errs.CodeOf(err) != errs.Invalid || !strings.Contains(err.Error(), tc.in) {
				t.Errorf("%s: Txn = %v, want invalid naming %q", tc.name, err, tc.in)
			}
		}
		for i := range 8 {
			if _, _, err := s.Get(ctx, fmt.Sprintf("k%d", i), false); errs.CodeOf(err) != errs.NotFound {
				t.Fatalf("k%d written by a refused txn", i)
			}
		}
	})
}
