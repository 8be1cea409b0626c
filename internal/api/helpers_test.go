package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/servicetest"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// fakeKV is a KVService over a real kv.Service on an in-memory replicator. It
// records every call and, when err is set, fails every call with it.
type fakeKV struct {
	svc *kv.Service
	rep *statetest.Replicator

	mu    sync.Mutex
	calls []string
	err   error
}

func newFakeKV() *fakeKV {
	rep := statetest.NewReplicator(4, kv.StateMachine{})
	return &fakeKV{svc: kv.NewService(rep, kv.Limits{MaxKey: 64, MaxValue: 1024, MaxList: 100}), rep: rep}
}

func (f *fakeKV) record(format string, args ...any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
	return f.err
}

func (f *fakeKV) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeKV) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

func (f *fakeKV) PutWith(ctx context.Context, user, key string, value []byte, opt kv.PutOptions) (kv.Written, error) {
	var err error
	switch {
	case opt.IfAbsent:
		err = f.record("Create user=%q key=%q idem=%q", user, key, opt.IdempotencyKey)
	default:
		err = f.record("Put user=%q key=%q if=%d idem=%q", user, key, opt.IfVersion, opt.IdempotencyKey)
	}
	if err != nil {
		return kv.Written{}, err
	}
	return f.svc.PutWith(ctx, user, key, value, opt)
}

func (f *fakeKV) Get(ctx context.Context, key string, stale bool) (kv.Item, int64, error) {
	if err := f.record("Get key=%q stale=%v", key, stale); err != nil {
		return kv.Item{}, 0, err
	}
	return f.svc.Get(ctx, key, stale)
}

func (f *fakeKV) Delete(ctx context.Context, user, key string, ifVersion uint64, idem string) error {
	if err := f.record("Delete user=%q key=%q if=%d idem=%q", user, key, ifVersion, idem); err != nil {
		return err
	}
	return f.svc.Delete(ctx, user, key, ifVersion, idem)
}

func (f *fakeKV) List(ctx context.Context, prefix, after string, limit int, stale bool) ([]kv.ListItem, int64, error) {
	if err := f.record("List prefix=%q after=%q limit=%d stale=%v", prefix, after, limit, stale); err != nil {
		return nil, 0, err
	}
	return f.svc.List(ctx, prefix, after, limit, stale)
}

// fakeStatus is a StatusSource with fixed answers.
type fakeStatus struct {
	mu    sync.Mutex
	ready bool
	st    *ClusterStatus
	pm    PartitionMap
	err   error
}

func (f *fakeStatus) Ready() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ready
}

func (f *fakeStatus) ClusterStatus(context.Context) (*ClusterStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.err
}

func (f *fakeStatus) PartitionMap() PartitionMap {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pm
}

// testEnv is a Server with its fakes.
type testEnv struct {
	kv     *fakeKV
	status *fakeStatus
	srv    *Server
	h      http.Handler
}

func newEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	e := &testEnv{kv: newFakeKV(), status: &fakeStatus{ready: true}}
	if cfg.KV == nil {
		cfg.KV = e.kv
		if cfg.KVWatch == nil {
			cfg.KVWatch = servicetest.KVWatch{KV: e.kv.svc, Rep: e.kv.rep}
		}
	}
	if cfg.Status == nil {
		cfg.Status = e.status
	}
	if cfg.MaxKVValue == 0 {
		cfg.MaxKVValue = 1024
	}
	e.srv = New(cfg)
	e.h = e.srv.Handler()
	return e
}

// do sends a request through the handler and checks the answer against
// openapi.json (checkResponse); headers alternate name, value.
func (e *testEnv) do(t *testing.T, method, target, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewBufferString(body)
	}
	r := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	return serve(t, e.h, r)
}

// mustPut stores a value through the API and returns its version header.
func (e *testEnv) mustPut(t *testing.T, key, value string) string {
	t.Helper()
	w := e.do(t, http.MethodPut, "/api/v1/kv/"+key, value)
	if w.Code != http.StatusOK {
		t.Fatalf("PUT %s = %d %s", key, w.Code, w.Body)
	}
	return w.Header().Get("X-Parley-Version")
}

// mustErrorBody checks w is a JSON error with the given status and code and
// returns it.
func mustErrorBody(t *testing.T, w *httptest.ResponseRecorder, status int, code string) errorJSON {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d; body %s", w.Code, status, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var body map[string]map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	e, ok := body["error"]
	if !ok || len(body) != 1 || len(e) != 3 {
		t.Fatalf("error body %s does not have the shape {error:{code,message,retryable}}", w.Body)
	}
	out := errorJSON{}
	if err := json.Unmarshal(w.Body.Bytes(), &struct{ Error *errorJSON }{&out}); err != nil {
		t.Fatal(err)
	}
	if string(out.Code) != code {
		t.Fatalf("code = %q, want %q; body %s", out.Code, code, w.Body)
	}
	if out.Message == "" {
		t.Fatal("empty error message")
	}
	return out
}
