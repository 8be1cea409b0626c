package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/kv"
)

// wantStatus fails unless err is an *Error of status and code whose
// message mentions in.
func wantStatus(t *testing.T, err error, status int, code, in string) {
	t.Helper()
	e, ok := errors.AsType[*client.Error](err)
	if !ok || e.Status != status || (code != "" && e.Code != code) || !strings.Contains(e.Message, in) {
		t.Fatalf("error = %v, want %d %s mentioning %q", err, status, code, in)
	}
}

// unchanged runs bad and fails if it wrote anything.
func (s *fullServer) unchanged(t *testing.T, bad func()) {
	t.Helper()
	before := s.Writes()
	bad()
	if after := s.Writes(); after != before {
		t.Fatalf("a refused call wrote %d times", after-before)
	}
}

func TestClientAPI_KVRevisions(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	c := s.user(t, "alice")
	w1, err := c.KVWrite(ctx, "cfg/a", []byte("1"), client.PutOptions{})
	if err != nil || w1.Version != 1 || w1.Revision == 0 {
		t.Fatalf("KVWrite = %+v, %v", w1, err)
	}
	w2, err := c.KVWrite(ctx, "cfg/a", []byte("2"), client.PutOptions{IfVersion: 1})
	if err != nil || w2.Version != 2 || w2.Revision <= w1.Revision {
		t.Fatalf("KVWrite(cas) = %+v, %v", w2, err)
	}
	t.Run("read at a revision", func(t *testing.T) {
		it, err := c.KVGetItem(ctx, "cfg/a", client.GetOptions{Revision: w1.Revision})
		if err != nil || string(it.Value) != "1" || it.Version != 1 || it.Revision != w1.Revision {
			t.Fatalf("KVGetItem(rev %d) = %+v, %v", w1.Revision, it, err)
		}
		it, err = c.KVGetItem(ctx, "cfg/a", client.GetOptions{})
		if err != nil || string(it.Value) != "2" || it.Revision != w2.Revision {
			t.Fatalf("KVGetItem = %+v, %v", it, err)
		}
		_, err = c.KVGetItem(ctx, "cfg/a", client.GetOptions{Revision: w2.Revision + 100})
		wantStatus(t, err, http.StatusBadRequest, "invalid", "ahead")
		_, err = c.KVGetItem(ctx, "cfg/a", client.GetOptions{Revision: w1.Revision, Stale: true})
		wantStatus(t, err, http.StatusBadRequest, "invalid", "stale")
		// "{cfg/a}x" shares cfg/a's partition (its tag is "cfg/a").
		_, err = c.KVGetItem(ctx, "{cfg/a}x", client.GetOptions{Revision: w1.Revision})
		wantStatus(t, err, http.StatusNotFound, "not_found", "")
	})
	t.Run("history", func(t *testing.T) {
		h, err := c.KVHistory(ctx, "cfg/a")
		if err != nil || len(h.Versions) != 2 || string(h.Versions[0].Value) != "1" || h.Versions[1].Revision != w2.Revision {
			t.Fatalf("KVHistory = %+v, %v", h, err)
		}
		if err := c.KVDelete(ctx, "cfg/a", client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		h, err = c.KVHistory(ctx, "cfg/a")
		if err != nil || len(h.Versions) != 3 || h.Versions[2].Type != "delete" || h.Versions[2].Value != nil {
			t.Fatalf("KVHistory after delete = %+v, %v", h, err)
		}
		_, err = c.KVGetItem(ctx, "cfg/a", client.GetOptions{Revision: h.Revision})
		wantStatus(t, err, http.StatusNotFound, "not_found", "delete")
	})
	t.Run("compacted beyond what is kept", func(t *testing.T) {
		first, err := c.KVWrite(ctx, "{hot}", []byte("0"), client.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range kv.Window + 20 {
			if _, err := c.KVPut(ctx, "{hot}", []byte(fmt.Sprint(i)), client.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		_, err = c.KVGetItem(ctx, "{hot}", client.GetOptions{Revision: first.Revision})
		wantStatus(t, err, http.StatusGone, "history_compacted", "no longer kept")
		w, err := c.KVWatch(ctx, client.WatchOptions{Key: "{hot}", After: fmt.Sprint(first.Revision)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		_, err = w.Next()
		wantStatus(t, err, http.StatusGone, "history_compacted", "")
	})
	t.Run("bad input changes nothing", func(t *testing.T) {
		s.unchanged(t, func() {
			for _, tc := range []struct {
				key  string
				opts client.PutOptions
				in   string
			}{
				{"k", client.PutOptions{TTL: time.Millisecond}, "ttl"},
				{"k", client.PutOptions{TTL: time.Minute, Lease: 7}, "not both"},
				{"k", client.PutOptions{Lease: 12345}, "lease"},
				{"watch", client.PutOptions{}, "reserved"},
			} {
				_, err := c.KVPut(ctx, tc.key, []byte("v"), tc.opts)
				e, ok := errors.AsType[*client.Error](err)
				if !ok || e.Status/100 != 4 || !strings.Contains(e.Message, tc.in) {
					t.Errorf("KVPut(%q, %+v) = %v, want a 4xx naming %q", tc.key, tc.opts, err, tc.in)
				}
			}
		})
	})
}

func TestClientAPI_KVTTLAndLeases(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	c := s.user(t, "alice")
	expireAll := func(t *testing.T) {
		t.Helper()
		for _, p := range s.KVRep.Partitions() {
			if _, err := s.KV.Expire(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.KVPut(ctx, "session", []byte("x"), client.PutOptions{TTL: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	it, err := c.KVGetItem(ctx, "session", client.GetOptions{})
	if err != nil || it.ExpiresMs == 0 {
		t.Fatalf("KVGetItem = %+v, %v; want an expiry", it, err)
	}
	s.KVRep.Advance(31 * time.Second)
	expireAll(t)
	if _, _, err := c.KVGet(ctx, "session", client.GetOptions{}); err == nil {
		t.Fatal("the key outlived its ttl")
	}

	l, err := c.LeaseGrant(ctx, 10*time.Second)
	if err != nil || l.ID == 0 || l.TTLMs != 10_000 {
		t.Fatalf("LeaseGrant = %+v, %v", l, err)
	}
	for _, k := range []string{"svc/1", "svc/2", "svc/3", "svc/4"} {
		if _, err := c.KVPut(ctx, k, []byte("up"), client.PutOptions{Lease: l.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := c.LeaseGet(ctx, l.ID); err != nil || got.ID != l.ID {
		t.Fatalf("LeaseGet = %+v, %v", got, err)
	}
	s.KVRep.Advance(8 * time.Second)
	if _, err := c.LeaseKeepAlive(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	s.KVRep.Advance(8 * time.Second)
	expireAll(t)
	if keys, err := c.KVList(ctx, "svc/", "", 0); err != nil || len(keys) != 4 || keys[0].Lease != l.ID {
		t.Fatalf("keys after keep-alive = %+v, %v", keys, err)
	}
	if err := c.LeaseRevoke(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	if keys, err := c.KVList(ctx, "svc/", "", 0); err != nil || len(keys) != 0 {
		t.Fatalf("keys after revoke = %+v, %v", keys, err)
	}
	_, err = c.LeaseKeepAlive(ctx, l.ID)
	wantStatus(t, err, http.StatusNotFound, "not_found", "lease")
	_, err = c.LeaseGet(ctx, 99)
	wantStatus(t, err, http.StatusNotFound, "not_found", "lease")
	err = c.LeaseRevoke(ctx, 1<<40|999)
	wantStatus(t, err, http.StatusNotFound, "not_found", "lease")
	s.unchanged(t, func() {
		_, err = c.LeaseGrant(ctx, 0)
		wantStatus(t, err, http.StatusBadRequest, "invalid", "ttl")
		_, err = c.LeaseGrant(ctx, 100*365*24*time.Hour)
		wantStatus(t, err, http.StatusBadRequest, "invalid", "ttl")
	})
}

func TestClientAPI_KVTxn(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	c := s.user(t, "alice")
	res, err := c.KVTxn(ctx, client.Txn{
		Compare: []client.TxnCompare{{Key: "{acct:1}/balance", Version: 0}},
		Success: []client.TxnOp{client.TxnPut("{acct:1}/balance", []byte("100")), client.TxnPut("{acct:1}/owner", []byte("alice"))},
		Failure: []client.TxnOp{client.TxnGet("{acct:1}/balance")},
	})
	if err != nil || !res.Succeeded || len(res.Results) != 2 || res.Results[0].Version != 1 {
		t.Fatalf("create txn = %+v, %v", res, err)
	}
	res, err = c.KVTxn(ctx, client.Txn{
		Compare: []client.TxnCompare{{Key: "{acct:1}/balance", Value: []byte("50")}},
		Success: []client.TxnOp{client.TxnDelete("{acct:1}/balance")},
		Failure: []client.TxnOp{client.TxnGet("{acct:1}/balance"), client.TxnGet("{acct:1}/owner")},
	})
	if err != nil || res.Succeeded || string(res.Results[0].Value) != "100" || string(res.Results[1].Value) != "alice" {
		t.Fatalf("failing txn = %+v, %v", res, err)
	}
	s.unchanged(t, func() {
		var ops []client.TxnOp
		for i := range 16 {
			ops = append(ops, client.TxnPut(fmt.Sprintf("plain/%d", i), []byte("x")))
		}
		_, err = c.KVTxn(ctx, client.Txn{Success: ops})
		wantStatus(t, err, http.StatusBadRequest, "invalid", "span partition")
		_, err = c.KVTxn(ctx, client.Txn{Success: []client.TxnOp{{Op: "frob", Key: "a"}}})
		wantStatus(t, err, http.StatusBadRequest, "invalid", "op must be")
		_, err = c.KVTxn(ctx, client.Txn{})
		wantStatus(t, err, http.StatusBadRequest, "invalid", "operation")
		_, err = c.KVTxn(ctx, client.Txn{Success: []client.TxnOp{client.TxnPut("watch", nil)}})
		wantStatus(t, err, http.StatusBadRequest, "invalid", "reserved")
	})
}

func TestClientAPI_KVWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := newFullServer(t)
	c := s.user(t, "alice")
	w, err := c.KVWatch(ctx, client.WatchOptions{Prefix: "app/"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	start := w.Token()
	var want []string
	for i := range 6 {
		k := fmt.Sprintf("app/%d", i%3)
		if _, err := c.KVPut(ctx, k, []byte(fmt.Sprint(i)), client.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, "put "+k+" "+fmt.Sprint(i))
	}
	if _, err := c.KVPut(ctx, "other/x", []byte("no"), client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.KVDelete(ctx, "app/0", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "delete app/0 ")
	got := collect(t, w, len(want))
	if !equalSets(got, want) {
		t.Fatalf("watch got %q, want %q (per partition in revision order)", got, want)
	}
	t.Run("resume from the start token sees the same changes", func(t *testing.T) {
		w2, err := c.KVWatch(ctx, client.WatchOptions{Prefix: "app/", After: start})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Close()
		if again := collect(t, w2, len(want)); !equalSets(again, want) {
			t.Fatalf("resumed watch got %q, want %q", again, want)
		}
	})
	t.Run("bad watches are refused", func(t *testing.T) {
		for _, tc := range []struct {
			opts client.WatchOptions
			in   string
		}{
			{client.WatchOptions{Prefix: "app/", After: "garbage"}, "after"},
			{client.WatchOptions{Prefix: "app/", After: "5"}, "bare revision"},
			{client.WatchOptions{Key: "k", After: "99:1"}, "does not follow"},
		} {
			_, err := c.KVWatch(ctx, tc.opts)
			wantStatus(t, err, http.StatusBadRequest, "invalid", tc.in)
		}
	})
}

// collect reads n events from w, as "type key value" strings.
func collect(t *testing.T, w *client.KVWatch, n int) []string {
	t.Helper()
	var out []string
	last := map[uint64]uint64{}
	for len(out) < n {
		ch, err := w.Next()
		if err != nil {
			t.Fatalf("Next after %q: %v", out, err)
		}
		if ch.Revision <= last[ch.Partition] {
			t.Fatalf("revision %d of partition %d after %d", ch.Revision, ch.Partition, last[ch.Partition])
		}
		last[ch.Partition] = ch.Revision
		for _, e := range ch.Events {
			out = append(out, e.Type+" "+e.Key+" "+string(e.Value))
		}
	}
	return out
}

// equalSets compares as multisets: a prefix spans partitions, ordered per
// partition only.
func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		if m[s]--; m[s] < 0 {
			return false
		}
	}
	return true
}
