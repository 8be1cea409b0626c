package kv_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state/statetest"
	"github.com/parley-chat/parley/internal/wire"
)

func newService(t *testing.T, partitions int) (*kv.Service, *statetest.Replicator) {
	t.Helper()
	r := statetest.NewReplicator(partitions, kv.StateMachine{})
	return kv.NewService(r, kv.Limits{MaxKey: 16, MaxValue: 32, MaxList: 50}), r
}

func mustPut(t *testing.T, s *kv.Service, key, value string) uint64 {
	t.Helper()
	v, err := s.Put(context.Background(), "alice", key, []byte(value), 0, "")
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return v
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func TestService_PutGet(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 4)
	t.Run("versions grow", func(t *testing.T) {
		for want := uint64(1); want <= 3; want++ {
			if v := mustPut(t, s, "a", fmt.Sprint(want)); v != want {
				t.Fatalf("Put version = %d, want %d", v, want)
			}
		}
		it, staleMs, err := s.Get(ctx, "a", false)
		if err != nil || string(it.Value) != "3" || it.Version != 3 || staleMs != 0 || it.ModifiedMs == 0 {
			t.Fatalf("Get = (%+v, %d, %v)", it, staleMs, err)
		}
	})
	t.Run("stale read reports staleness", func(t *testing.T) {
		r.StaleMs = 42
		_, staleMs, err := s.Get(ctx, "a", true)
		if err != nil || staleMs != 42 {
			t.Fatalf("stale Get = (%d, %v), want 42", staleMs, err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, _, err := s.Get(ctx, "nope", false)
		wantCode(t, err, errs.NotFound)
	})
	t.Run("cas", func(t *testing.T) {
		v := mustPut(t, s, "c", "1")
		_, err := s.Put(ctx, "alice", "c", []byte("x"), v+1, "")
		wantCode(t, err, errs.PreconditionFailed)
		if !strings.Contains(err.Error(), fmt.Sprintf("current version is %d", v)) {
			t.Fatalf("error %q does not name the current version", err)
		}
		if got, err := s.Put(ctx, "alice", "c", []byte("x"), v, ""); err != nil || got != v+1 {
			t.Fatalf("CAS put = (%d, %v), want %d", got, err, v+1)
		}
	})
	t.Run("create", func(t *testing.T) {
		if v, err := s.Create(ctx, "alice", "new", []byte("1"), ""); err != nil || v != 1 {
			t.Fatalf("Create = (%d, %v)", v, err)
		}
		_, err := s.Create(ctx, "alice", "new", []byte("2"), "")
		wantCode(t, err, errs.PreconditionFailed)
	})
}

func TestService_Delete(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 4)
	mustPut(t, s, "a", "1")
	mustPut(t, s, "a", "2")
	wantCode(t, s.Delete(ctx, "alice", "a", 1, ""), errs.PreconditionFailed)
	if err := s.Delete(ctx, "alice", "a", 2, ""); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantCode(t, s.Delete(ctx, "alice", "a", 0, ""), errs.NotFound)
	_, _, err := s.Get(ctx, "a", false)
	wantCode(t, err, errs.NotFound)
	if v := mustPut(t, s, "a", "3"); v != 1 {
		t.Fatalf("version after delete = %d, want 1", v)
	}
}

func TestService_Idempotency(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 1)
	put := func(user, idem, value string) uint64 {
		t.Helper()
		v, err := s.Put(ctx, user, "k", []byte(value), 0, idem)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := put("alice", "req-1", "first"); v != 1 {
		t.Fatalf("first put version %d", v)
	}
	if v := put("alice", "req-1", "retry"); v != 1 {
		t.Fatalf("retried put version = %d, want the first result 1", v)
	}
	if got := r.Applied(1); got != 1 {
		t.Fatalf("applied %d commands, want 1", got)
	}
	it, _, _ := s.Get(ctx, "k", false)
	if string(it.Value) != "first" {
		t.Fatalf("value = %q, want the first put's", it.Value)
	}
	if v := put("bob", "req-1", "bob's"); v != 2 {
		t.Fatalf("another user's put with the same key = %d, want 2", v)
	}
	if v := put("alice", "", "a"); v != 3 {
		t.Fatalf("put without idempotency key = %d, want 3", v)
	}
	if v := put("alice", "", "b"); v != 4 {
		t.Fatalf("second put without idempotency key = %d, want 4", v)
	}
}

func TestDedupKey(t *testing.T) {
	cases := []struct {
		name         string
		u1, k1       string
		u2, k2       string
		wantDistinct bool
	}{
		{"same", "alice", "x", "alice", "x", false},
		{"user boundary", "ab", "c", "a", "bc", true},
		{"users", "alice", "x", "bob", "x", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if d := kv.DedupKey(tc.u1, tc.k1) != kv.DedupKey(tc.u2, tc.k2); d != tc.wantDistinct {
				t.Fatalf("distinct = %v, want %v", d, tc.wantDistinct)
			}
		})
	}
	if kv.DedupKey("alice", "") != "" {
		t.Fatal("DedupKey without idempotency key is not empty")
	}
}

func TestService_Validation(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 2)
	long := strings.Repeat("k", 17)
	cases := []struct {
		name string
		call func() error
		code errs.Code
		word string // the field the message must name
	}{
		{"put empty key", func() error { _, err := s.Put(ctx, "", "", nil, 0, ""); return err }, errs.Invalid, "key"},
		{"put long key", func() error { _, err := s.Put(ctx, "", long, nil, 0, ""); return err }, errs.TooLarge, "key"},
		{"put bad utf8", func() error { _, err := s.Put(ctx, "", "\xff", nil, 0, ""); return err }, errs.Invalid, "key"},
		{"put large value", func() error { _, err := s.Put(ctx, "", "k", make([]byte, 33), 0, ""); return err }, errs.TooLarge, "value"},
		{"put long idempotency key", func() error {
			_, err := s.Put(ctx, "", "k", nil, 0, strings.Repeat("i", wire.MaxIdempotencyKey+1))
			return err
		}, errs.Invalid, "idempotency key"},
		{"get empty key", func() error { _, _, err := s.Get(ctx, "", false); return err }, errs.Invalid, "key"},
		{"delete long key", func() error { return s.Delete(ctx, "", long, 0, "") }, errs.TooLarge, "key"},
		{"list negative limit", func() error { _, _, err := s.List(ctx, "", "", -1, false); return err }, errs.Invalid, "limit"},
		{"list limit over max", func() error { _, _, err := s.List(ctx, "", "", 51, false); return err }, errs.Invalid, "limit"},
		{"list long prefix", func() error { _, _, err := s.List(ctx, long, "", 1, false); return err }, errs.TooLarge, "prefix"},
		{"list long after", func() error { _, _, err := s.List(ctx, "", long, 1, false); return err }, errs.TooLarge, "after"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			wantCode(t, err, tc.code)
			if !strings.Contains(err.Error(), tc.word) {
				t.Fatalf("error %q does not name %q", err, tc.word)
			}
		})
	}
	if r.Applied(1)+r.Applied(2) != 0 {
		t.Fatal("an invalid call was proposed")
	}
}

func TestService_List(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 5)
	var all []string
	for i := range 40 {
		k := fmt.Sprintf("key/%02d", i)
		all = append(all, k)
		mustPut(t, s, k, strings.Repeat("v", i%7))
	}
	mustPut(t, s, "other", "x")
	// The keys must really be spread, or the merge is not tested.
	used := map[uint64]bool{}
	for _, k := range all {
		used[r.PartitionOf(k)] = true
	}
	if len(used) < 3 {
		t.Fatalf("keys landed in only %d partitions", len(used))
	}
	cases := []struct {
		name          string
		prefix, after string
		limit         int
		want          []string
	}{
		{"default limit", "", "", 0, append(append([]string(nil), all...), "other")},
		{"limit", "key/", "", 5, all[:5]},
		{"after", "key/", "key/09", 3, all[10:13]},
		{"tail", "key/", "key/37", 10, all[38:]},
		{"prefix", "oth", "", 10, []string{"other"}},
		{"none", "zzz", "", 10, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items, staleMs, err := s.List(ctx, tc.prefix, tc.after, tc.limit, false)
			if err != nil || staleMs != 0 {
				t.Fatalf("List: %d, %v", staleMs, err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.Key)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("List = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("sizes and versions", func(t *testing.T) {
		items, _, _ := s.List(ctx, "key/0", "", 10, false)
		for i, it := range items {
			if it.Size != i%7 || it.Version != 1 {
				t.Fatalf("item %+v: want size %d version 1", it, i%7)
			}
		}
	})
	t.Run("stale", func(t *testing.T) {
		r.StaleMs = 9
		if _, staleMs, err := s.List(ctx, "", "", 1, true); err != nil || staleMs != 9 {
			t.Fatalf("stale List = (%d, %v), want 9", staleMs, err)
		}
	})
}

func TestService_ReplicatorErrors(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 3)
	mustPut(t, s, "a", "1")
	r.SetErr(errs.New(errs.Unavailable, "no leader"))
	_, err := s.Put(ctx, "", "a", nil, 0, "")
	wantCode(t, err, errs.Unavailable)
	_, _, err = s.Get(ctx, "a", false)
	wantCode(t, err, errs.Unavailable)
	wantCode(t, s.Delete(ctx, "", "a", 0, ""), errs.Unavailable)
	_, _, err = s.List(ctx, "", "", 10, false)
	wantCode(t, err, errs.Unavailable)
	var e *errs.Error
	if !errors.As(err, &e) || !e.Retryable {
		t.Fatalf("List error %v lost its retryable *errs.Error", err)
	}
}

func TestService_Concurrent(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 4)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				key := fmt.Sprintf("k%d", j%5)
				if _, err := s.Put(ctx, "", key, []byte{byte(i)}, 0, ""); err != nil {
					t.Error(err)
				}
				if _, _, err := s.List(ctx, "", "", 10, j%2 == 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var total uint64
	for j := range 5 {
		it, _, err := s.Get(ctx, fmt.Sprintf("k%d", j), false)
		if err != nil {
			t.Fatal(err)
		}
		total += it.Version
	}
	if total != 400 {
		t.Fatalf("versions sum to %d, want 400 puts", total)
	}
}

func BenchmarkService_Put(b *testing.B) {
	s := kv.NewService(statetest.NewReplicator(16, kv.StateMachine{}), kv.Limits{})
	value := make([]byte, 256)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Put(ctx, "alice", "users/alice/settings", value, 0, ""); err != nil {
			b.Fatal(err)
		}
	}
}
