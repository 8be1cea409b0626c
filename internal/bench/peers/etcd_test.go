package peers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/parley-chat/parley/internal/bench"
)

// fakeEtcd imitates the two gateway endpoints of etcd 3.4 used by EtcdKV,
// checking every request the way grpc-gateway would decode it.
type fakeEtcd struct {
	t      *testing.T
	mu     sync.Mutex
	data   map[string][]byte
	puts   int
	ranges int
	fail   bool // answer every KV request with 503
}

// ServeHTTP implements http.Handler.
func (f *fakeEtcd) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"health":"true"}`)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		f.t.Errorf("%s %s with content type %q, want a JSON POST", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var req map[string]string
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.t.Errorf("%s: body is not a JSON object of strings: %v", r.URL.Path, err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	key, err := base64.StdEncoding.DecodeString(req["key"])
	if err != nil || !strings.HasPrefix(string(key), "bench/") {
		f.t.Errorf("%s: key %q (%v): want the base64 of a bench/ key", r.URL.Path, req["key"], err)
	}
	if f.fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"etcdserver: no leader",`+"\n"+`"code":14}`)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/v3/kv/put":
		if len(req) != 2 {
			f.t.Errorf("put body has fields %v, want key and value", req)
		}
		value, err := base64.StdEncoding.DecodeString(req["value"])
		if err != nil {
			f.t.Errorf("put: value %q is not base64: %v", req["value"], err)
		}
		f.data[string(key)] = value
		f.puts++
		fmt.Fprint(w, `{"header":{"revision":"2"}}`)
	case "/v3/kv/range":
		if len(req) != 1 {
			f.t.Errorf("range body has fields %v, want only key", req)
		}
		f.ranges++
		if v, ok := f.data[string(key)]; ok {
			fmt.Fprintf(w, `{"kvs":[{"key":%q,"value":%q}],"count":"1"}`, req["key"], base64.StdEncoding.EncodeToString(v))
			return
		}
		fmt.Fprint(w, `{"header":{"revision":"2"}}`)
	default:
		f.t.Errorf("unexpected path %s", r.URL.Path)
		http.NotFound(w, r)
	}
}

// mustEtcdKV starts a fake etcd and returns a workload against it.
func mustEtcdKV(t *testing.T, mix string, keys, valueSize int) (*EtcdKV, *fakeEtcd, string) {
	t.Helper()
	fake := &fakeEtcd{t: t, data: map[string][]byte{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	w, err := NewEtcdKV(bench.EtcdKVOptions{
		Endpoints: []string{srv.URL + "/"}, HTTP: srv.Client(),
		Mix: mix, ValueSize: valueSize, Keys: keys, KeyPrefix: "bench/",
	})
	if err != nil {
		t.Fatal(err)
	}
	return w, fake, srv.URL
}

func TestEtcdKV_Op(t *testing.T) {
	t.Run("puts store KV's keys and values", func(t *testing.T) {
		w, fake, _ := mustEtcdKV(t, bench.MixPut, 50, 30)
		rep, err := bench.Run(context.Background(), w, bench.Options{Workers: 4, Requests: 200})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Ops != 200 || rep.Errors != 0 || rep.Workload != "etcd-kv/put" {
			t.Fatalf("ops %d errors %d workload %s; kinds %v", rep.Ops, rep.Errors, rep.Workload, rep.ErrorKinds)
		}
		if fake.puts != 200 || fake.ranges != 0 || len(fake.data) == 0 || len(fake.data) > 50 {
			t.Errorf("puts %d ranges %d distinct keys %d", fake.puts, fake.ranges, len(fake.data))
		}
		// The same key choice and value bytes as the Parley workload.
		n, _ := bench.KVOp(bench.MixPut, 50, 7)
		want := bench.KVKey("bench/", n)
		if v, ok := fake.data[want]; !ok || string(v) != "abcdefghijklmnopqrstuvwxyzabcd" {
			t.Errorf("key %s holds %q (present %v)", want, v, ok)
		}
	})
	t.Run("gets read a filled keyspace", func(t *testing.T) {
		w, fake, _ := mustEtcdKV(t, bench.MixGet, 20, 8)
		rep, err := bench.Run(context.Background(), w, bench.Options{Workers: 3, Requests: 100})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Ops != 100 || rep.Errors != 0 || fake.puts != 20 || fake.ranges != 100 || len(fake.data) != 20 {
			t.Errorf("ops %d errors %d puts %d ranges %d keys %d", rep.Ops, rep.Errors, fake.puts, fake.ranges, len(fake.data))
		}
	})
	t.Run("mixed does both", func(t *testing.T) {
		w, fake, _ := mustEtcdKV(t, bench.MixMixed, 20, 8)
		if _, err := bench.Run(context.Background(), w, bench.Options{Workers: 2, Requests: 200}); err != nil {
			t.Fatal(err)
		}
		if fake.puts <= 20 || fake.ranges == 0 || fake.puts+fake.ranges != 220 {
			t.Errorf("puts %d ranges %d, want 20 fills plus 200 operations of both kinds", fake.puts, fake.ranges)
		}
	})
	t.Run("a failure quotes status and body", func(t *testing.T) {
		w, fake, _ := mustEtcdKV(t, bench.MixPut, 10, 8)
		fake.fail = true
		err := w.Op(context.Background(), 0, 1)
		want := `put: 503 Service Unavailable: {"error":"etcdserver: no leader", "code":14}`
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %s", err, want)
		}
	})
	t.Run("a failed fill stops the run", func(t *testing.T) {
		w, fake, _ := mustEtcdKV(t, bench.MixGet, 10, 8)
		fake.fail = true
		_, err := bench.Run(context.Background(), w, bench.Options{Workers: 2, Requests: 10})
		if err == nil || !strings.Contains(err.Error(), "fill key bench/") || !strings.Contains(err.Error(), "503") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestEtcdKV_Health(t *testing.T) {
	w, _, url := mustEtcdKV(t, bench.MixPut, 10, 8)
	if err := w.Health(context.Background(), url); err != nil {
		t.Errorf("healthy member: %v", err)
	}
	if err := w.Health(context.Background(), url+"/nothing"); err == nil {
		t.Error("a 404 counted as healthy")
	}
}

func TestEtcdKV_Bodies(t *testing.T) {
	w, err := NewEtcdKV(bench.EtcdKVOptions{Endpoints: []string{"http://e"}, HTTP: http.DefaultClient, Mix: bench.MixPut, ValueSize: 3, Keys: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(w.putBody("foo")), `{"key":"Zm9v","value":"YWJj"}`; got != want {
		t.Errorf("put body %s, want %s", got, want)
	}
	if got, want := string(w.rangeBody("foo")), `{"key":"Zm9v"}`; got != want {
		t.Errorf("range body %s, want %s", got, want)
	}
}

func TestNewEtcdKV_Invalid(t *testing.T) {
	ok := bench.EtcdKVOptions{Endpoints: []string{"http://e"}, HTTP: http.DefaultClient, Mix: bench.MixPut, Keys: 1}
	for name, mod := range map[string]func(*bench.EtcdKVOptions){
		"no endpoints":   func(o *bench.EtcdKVOptions) { o.Endpoints = nil },
		"no client":      func(o *bench.EtcdKVOptions) { o.HTTP = nil },
		"bad mix":        func(o *bench.EtcdKVOptions) { o.Mix = "delete" },
		"negative value": func(o *bench.EtcdKVOptions) { o.ValueSize = -1 },
		"no keys":        func(o *bench.EtcdKVOptions) { o.Keys = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			o := ok
			mod(&o)
			if _, err := NewEtcdKV(o); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func BenchmarkEtcdKV_PutBody(b *testing.B) {
	w, err := NewEtcdKV(bench.EtcdKVOptions{Endpoints: []string{"http://e"}, HTTP: http.DefaultClient, Mix: bench.MixPut, ValueSize: 256, Keys: 10000, KeyPrefix: "bench/"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = w.putBody("bench/00001234")
	}
}
