package client_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/api/openapi/openapitest"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// fakeStatus is an api.StatusSource with fixed answers.
type fakeStatus struct {
	ready bool
	st    *api.ClusterStatus
	pm    api.PartitionMap
}

func (f *fakeStatus) Ready() bool { return f.ready }

func (f *fakeStatus) ClusterStatus(context.Context) (*api.ClusterStatus, error) { return f.st, nil }

func (f *fakeStatus) PartitionMap() api.PartitionMap { return f.pm }

// env is a real api.Server over an in-memory kv store, and a Client for it.
type env struct {
	c      *client.Client
	rep    *statetest.Replicator
	status *fakeStatus
	srv    *httptest.Server
}

func newEnv(t *testing.T, opts ...client.Option) *env {
	t.Helper()
	rep := statetest.NewReplicator(4, kv.StateMachine{})
	st := &fakeStatus{ready: true}
	srv := httptest.NewServer(openapitest.Handler(t, api.New(api.Config{
		KV:     kv.NewService(rep, kv.Limits{MaxValue: 1 << 10}),
		Status: st,
		Authenticate: func(r *http.Request) (api.Identity, error) {
			if h := r.Header.Get("Authorization"); h != "" && h != "Bearer secret" {
				return api.Identity{}, errs.New(errs.Unauthorized, "unknown token")
			}
			return api.Identity{}, nil
		},
		MaxKVValue: 1 << 10,
	}).Handler()))
	t.Cleanup(srv.Close)
	opts = append([]client.Option{client.WithHTTPClient(srv.Client())}, opts...)
	return &env{c: client.New(srv.URL+"/", opts...), rep: rep, status: st, srv: srv}
}

func mustPut(t *testing.T, c *client.Client, key, value string, opts client.PutOptions) uint64 {
	t.Helper()
	v, err := c.KVPut(context.Background(), key, []byte(value), opts)
	if err != nil {
		t.Fatalf("KVPut(%q): %v", key, err)
	}
	return v
}

// mustAPIError checks err is an *client.Error with the given status and code.
func mustAPIError(t *testing.T, err error, status int, code string) *client.Error {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *client.Error", err, err)
	}
	if e.Status != status || e.Code != code || e.Message == "" {
		t.Fatalf("error %+v, want status %d code %q", e, status, code)
	}
	return e
}

func TestClient_KV(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.c
	t.Run("put and get", func(t *testing.T) {
		if v := mustPut(t, c, "greeting", "hello", client.PutOptions{}); v != 1 {
			t.Fatalf("version %d", v)
		}
		if v := mustPut(t, c, "greeting", "hello again", client.PutOptions{}); v != 2 {
			t.Fatalf("version %d", v)
		}
		val, v, err := c.KVGet(ctx, "greeting", client.GetOptions{})
		if err != nil || string(val) != "hello again" || v != 2 {
			t.Fatalf("KVGet = (%q, %d, %v)", val, v, err)
		}
		e.rep.StaleMs = 5
		if val, _, err := c.KVGet(ctx, "greeting", client.GetOptions{Stale: true}); err != nil || string(val) != "hello again" {
			t.Fatalf("stale KVGet = (%q, %v)", val, err)
		}
	})
	t.Run("keys needing escapes", func(t *testing.T) {
		for _, key := range []string{"a/b/c", "a/../b", "./x", "/lead", "trail/", "sp ace", "q?x#y&z=1", "100%", "%2F", "ünïcode", "a//b"} {
			value := []byte("value of " + key)
			if _, err := c.KVPut(ctx, key, value, client.PutOptions{}); err != nil {
				t.Fatalf("KVPut(%q): %v", key, err)
			}
			got, _, err := c.KVGet(ctx, key, client.GetOptions{})
			if err != nil || !bytes.Equal(got, value) {
				t.Fatalf("KVGet(%q) = (%q, %v)", key, got, err)
			}
		}
		keys, err := c.KVList(ctx, "a/../", "", 0)
		if err != nil || len(keys) != 1 || keys[0].Key != "a/../b" {
			t.Fatalf("KVList = (%+v, %v), want the key stored verbatim", keys, err)
		}
	})
	t.Run("binary value", func(t *testing.T) {
		value := []byte{0, 1, 2, 0xff, '\n'}
		mustPut(t, c, "bin", string(value), client.PutOptions{})
		got, _, err := c.KVGet(ctx, "bin", client.GetOptions{})
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("KVGet = (%q, %v)", got, err)
		}
	})
	t.Run("compare and swap", func(t *testing.T) {
		v := mustPut(t, c, "cas", "1", client.PutOptions{})
		_, err := c.KVPut(ctx, "cas", []byte("2"), client.PutOptions{IfVersion: v + 1})
		mustAPIError(t, err, 412, "precondition_failed")
		if got := mustPut(t, c, "cas", "2", client.PutOptions{IfVersion: v}); got != v+1 {
			t.Fatalf("CAS version %d", got)
		}
	})
	t.Run("if absent", func(t *testing.T) {
		if v := mustPut(t, c, "once", "1", client.PutOptions{IfAbsent: true}); v != 1 {
			t.Fatalf("version %d", v)
		}
		_, err := c.KVPut(ctx, "once", []byte("2"), client.PutOptions{IfAbsent: true})
		mustAPIError(t, err, 412, "precondition_failed")
	})
	t.Run("idempotent retry", func(t *testing.T) {
		opts := client.PutOptions{IdempotencyKey: "req-7"}
		first := mustPut(t, c, "idem", "1", opts)
		if again := mustPut(t, c, "idem", "1", opts); again != first {
			t.Fatalf("retry version %d, want the first %d", again, first)
		}
	})
	t.Run("delete", func(t *testing.T) {
		v := mustPut(t, c, "del", "x", client.PutOptions{})
		mustAPIError(t, c.KVDelete(ctx, "del", client.DeleteOptions{IfVersion: v + 1}), 412, "precondition_failed")
		if err := c.KVDelete(ctx, "del", client.DeleteOptions{IfVersion: v, IdempotencyKey: "d"}); err != nil {
			t.Fatal(err)
		}
		if err := c.KVDelete(ctx, "del", client.DeleteOptions{IdempotencyKey: "d"}); err != nil {
			t.Fatalf("retried delete: %v", err)
		}
		_, _, err := c.KVGet(ctx, "del", client.GetOptions{})
		if e := mustAPIError(t, err, 404, "not_found"); e.Retryable || client.IsRetryable(err) {
			t.Fatal("404 is retryable")
		}
		mustAPIError(t, c.KVDelete(ctx, "del", client.DeleteOptions{}), 404, "not_found")
	})
	t.Run("validation", func(t *testing.T) {
		_, err := c.KVPut(ctx, "big", make([]byte, 2<<10), client.PutOptions{})
		mustAPIError(t, err, 413, "too_large")
		_, err = c.KVPut(ctx, "", nil, client.PutOptions{})
		mustAPIError(t, err, 400, "invalid")
		_, err = c.KVPut(ctx, "k", nil, client.PutOptions{IfAbsent: true, IfVersion: 3})
		mustAPIError(t, err, 400, "invalid")
		_, err = c.KVList(ctx, "", "", -5)
		mustAPIError(t, err, 400, "invalid")
	})
}

func TestClient_KVList(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var want []string
	for _, k := range []string{"p/3", "p/1", "q", "p/2", "p/5", "p/4", "o"} {
		mustPut(t, e.c, k, k, client.PutOptions{})
		if strings.HasPrefix(k, "p/") {
			want = append(want, k)
		}
	}
	// Page two keys at a time.
	var got []string
	after := ""
	for {
		keys, err := e.c.KVList(ctx, "p/", after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			got = append(got, k.Key)
			if k.Version != 1 || k.Size != len(k.Key) || k.ModifiedMs == 0 {
				t.Fatalf("key %+v", k)
			}
		}
		if len(keys) < 2 {
			break
		}
		after = keys[len(keys)-1].Key
	}
	if want := []string{"p/1", "p/2", "p/3", "p/4", "p/5"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("paged keys %q, want %q", got, want)
	}
	keys, err := e.c.KVList(ctx, "none", "", 0)
	if err != nil || len(keys) != 0 {
		t.Fatalf("empty KVList = (%v, %v)", keys, err)
	}
}

func TestClient_Cluster(t *testing.T) {
	e := newEnv(t)
	e.status.st = &api.ClusterStatus{
		ClusterID: "c1",
		Nodes:     []api.NodeStatus{{ID: "n1", Addr: "a:1", Zone: "z1", State: "alive", Standby: true, Replicas: 3, Leaders: 2}},
		Partitions: []api.PartitionStatus{{ID: 4, Leader: "n1", Replicas: []api.ReplicaStatus{
			{Node: "n1", Role: "leader", Applied: 9, LagEntries: ptr[uint64](1), LagMs: ptr[int64](2)},
		}}},
		Moves: []api.Move{{Partition: 4, From: "n1", To: "n2", Phase: "learner"}},
	}
	got, err := e.c.Cluster(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &client.ClusterStatus{
		ClusterID: "c1",
		Nodes:     []client.NodeStatus{{ID: "n1", Addr: "a:1", Zone: "z1", State: "alive", Standby: true, Replicas: 3, Leaders: 2}},
		Partitions: []client.PartitionStatus{{ID: 4, Leader: "n1", Replicas: []client.ReplicaStatus{
			{Node: "n1", Role: "leader", Applied: 9, LagEntries: ptr[uint64](1), LagMs: ptr[int64](2)},
		}}},
		Moves: []client.Move{{Partition: 4, From: "n1", To: "n2", Phase: "learner"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Cluster = %+v, want %+v", got, want)
	}
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

func TestClient_Health(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	if err := e.c.Healthz(ctx); err != nil {
		t.Fatalf("Healthz: %v", err)
	}
	if err := e.c.Readyz(ctx); err != nil {
		t.Fatalf("Readyz: %v", err)
	}
	e.status.ready = false
	err := e.c.Readyz(ctx)
	if ae := mustAPIError(t, err, 503, "unavailable"); ae.RetryAfter != time.Second || !client.IsRetryable(err) {
		t.Fatalf("not-ready error %+v", ae)
	}
}

func TestClient_Token(t *testing.T) {
	ctx := context.Background()
	if _, err := newEnv(t, client.WithToken("secret")).c.KVPut(ctx, "k", nil, client.PutOptions{}); err != nil {
		t.Fatalf("good token: %v", err)
	}
	_, err := newEnv(t, client.WithToken("wrong")).c.KVPut(ctx, "k", nil, client.PutOptions{})
	mustAPIError(t, err, 401, "unauthorized")
}

func TestClient_Errors(t *testing.T) {
	ctx := context.Background()
	t.Run("unavailable", func(t *testing.T) {
		e := newEnv(t)
		e.rep.SetErr(errs.New(errs.Unavailable, "no leader"))
		_, err := e.c.KVPut(ctx, "k", []byte("v"), client.PutOptions{IdempotencyKey: "x"})
		ae := mustAPIError(t, err, 503, "unavailable")
		if !ae.Retryable || ae.RetryAfter != time.Second || !client.IsRetryable(err) {
			t.Fatalf("error %+v is not retryable after 1s", ae)
		}
		if ae.Message != "no leader" {
			t.Fatalf("message %q", ae.Message)
		}
	})
	t.Run("internal", func(t *testing.T) {
		e := newEnv(t)
		e.rep.SetErr(errors.New("disk on fire"))
		_, _, err := e.c.KVGet(ctx, "k", client.GetOptions{})
		ae := mustAPIError(t, err, 500, "internal")
		if strings.Contains(ae.Message, "fire") || client.IsRetryable(err) {
			t.Fatalf("internal error %+v leaked or is retryable", ae)
		}
	})
	t.Run("not a parley error", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "3")
			http.Error(w, "upstream down", http.StatusBadGateway)
		}))
		defer srv.Close()
		_, _, err := client.New(srv.URL).KVGet(ctx, "k", client.GetOptions{})
		ae := mustAPIError(t, err, 502, "")
		if ae.Message != "upstream down" || !ae.Retryable || ae.RetryAfter != 3*time.Second {
			t.Fatalf("error %+v", ae)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.URL
		srv.Close()
		_, err := client.New(addr).KVPut(ctx, "k", nil, client.PutOptions{})
		var ue *url.Error
		if err == nil || !errors.As(err, &ue) || !client.IsRetryable(err) {
			t.Fatalf("error %v: want a retryable wrapped *url.Error", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		e := newEnv(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, _, err := e.c.KVGet(cctx, "k", client.GetOptions{})
		if err == nil || !errors.Is(err, context.Canceled) || client.IsRetryable(err) {
			t.Fatalf("error %v: want canceled, not retryable", err)
		}
	})
	t.Run("attempt deadline", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		defer srv.Close()
		actx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := client.New(srv.URL).KVPut(actx, "k", nil, client.PutOptions{IdempotencyKey: "a"})
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || client.IsRetryable(err) || !client.IsRetryableAttempt(err) {
			t.Fatalf("error %v: want a deadline, retryable only as an attempt", err)
		}
		_, _, err = newEnv(t).c.KVGet(ctx, "absent", client.GetOptions{})
		if err == nil || client.IsRetryableAttempt(err) {
			t.Fatalf("error %v: a 404 is an answer, never worth another attempt", err)
		}
	})
	t.Run("nil", func(t *testing.T) {
		if client.IsRetryable(nil) || client.IsRetryableAttempt(nil) {
			t.Fatal("nil is retryable")
		}
	})
}

func TestError_Error(t *testing.T) {
	cases := []struct {
		err  *client.Error
		want string
	}{
		{&client.Error{Status: 404, Code: "not_found", Message: "key not found"}, "parley: 404 not_found: key not found"},
		{&client.Error{Status: 502, Message: "bad gateway"}, "parley: 502 Bad Gateway: bad gateway"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}
