package api

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestServer_KVPut(t *testing.T) {
	cases := []struct {
		name       string
		setup      []string // keys stored first, each with value "old"
		path       string
		body       string
		headers    []string
		wantStatus int
		wantCode   string // error code when wantStatus is not 200
		wantVer    string
		wantCall   string
		wantInMsg  string
	}{
		{name: "create", path: "a", body: "v", wantStatus: 200, wantVer: "1",
			wantCall: `Put user="" key="a" if=0 idem=""`},
		{name: "update", setup: []string{"a"}, path: "a", body: "v", wantStatus: 200, wantVer: "2"},
		{name: "nested key", path: "a/b/c", body: "v", wantStatus: 200, wantVer: "1",
			wantCall: `Put user="" key="a/b/c" if=0 idem=""`},
		{name: "escaped slashes and dots", path: "a%2F..%2Fb", body: "v", wantStatus: 200, wantVer: "1",
			wantCall: `Put user="" key="a/../b" if=0 idem=""`},
		{name: "empty value", path: "a", wantStatus: 200, wantVer: "1"},
		{name: "cas ok", setup: []string{"a"}, path: "a", body: "v", headers: []string{"If-Match", "1"},
			wantStatus: 200, wantVer: "2", wantCall: `Put user="" key="a" if=1 idem=""`},
		{name: "cas etag form", setup: []string{"a"}, path: "a", body: "v", headers: []string{"If-Match", `"1"`},
			wantStatus: 200, wantVer: "2"},
		{name: "cas mismatch", setup: []string{"a"}, path: "a", body: "v", headers: []string{"If-Match", "7"},
			wantStatus: 412, wantCode: "precondition_failed", wantInMsg: "current version is 1"},
		{name: "cas missing", path: "a", body: "v", headers: []string{"If-Match", "1"},
			wantStatus: 412, wantCode: "precondition_failed"},
		{name: "if-match garbage", path: "a", body: "v", headers: []string{"If-Match", "abc"},
			wantStatus: 400, wantCode: "invalid", wantInMsg: "If-Match"},
		{name: "if-match zero", path: "a", body: "v", headers: []string{"If-Match", "0"},
			wantStatus: 400, wantCode: "invalid", wantInMsg: "If-Match"},
		{name: "if-match negative", path: "a", body: "v", headers: []string{"If-Match", "-1"},
			wantStatus: 400, wantCode: "invalid", wantInMsg: "If-Match"},
		{name: "if-match star", path: "a", body: "v", headers: []string{"If-Match", "*"},
			wantStatus: 400, wantCode: "invalid", wantInMsg: "If-Match"},
		{name: "if-none-match create", path: "a", body: "v", headers: []string{"If-None-Match", "*"},
			wantStatus: 200, wantVer: "1", wantCall: `Create user="" key="a" idem=""`},
		{name: "if-none-match exists", setup: []string{"a"}, path: "a", body: "v", headers: []string{"If-None-Match", "*"},
			wantStatus: 412, wantCode: "precondition_failed"},
		{name: "if-none-match garbage", path: "a", body: "v", headers: []string{"If-None-Match", `"3"`},
			wantStatus: 400, wantCode: "invalid", wantInMsg: "If-None-Match"},
		{name: "both conditions", path: "a", body: "v", headers: []string{"If-Match", "1", "If-None-Match", "*"},
			wantStatus: 400, wantCode: "invalid", wantInMsg: "If-None-Match"},
		{name: "idempotency key passed", path: "a", body: "v", headers: []string{"Idempotency-Key", "req-1"},
			wantStatus: 200, wantVer: "1", wantCall: `Put user="" key="a" if=0 idem="req-1"`},
		{name: "empty key", path: "", body: "v", wantStatus: 400, wantCode: "invalid", wantInMsg: "key"},
		{name: "key too long", path: strings.Repeat("k", 65), body: "v", wantStatus: 413, wantCode: "too_large", wantInMsg: "key"},
		{name: "body too large", path: "a", body: strings.Repeat("v", 1025), wantStatus: 413, wantCode: "too_large", wantInMsg: "1024"},
		{name: "body at limit", path: "a", body: strings.Repeat("v", 1024), wantStatus: 200, wantVer: "1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			for _, k := range tc.setup {
				e.mustPut(t, k, "old")
			}
			w := e.do(t, http.MethodPut, "/api/v1/kv/"+tc.path, tc.body, tc.headers...)
			if tc.wantStatus != http.StatusOK {
				msg := mustErrorBody(t, w, tc.wantStatus, tc.wantCode)
				if !strings.Contains(msg.Message, tc.wantInMsg) {
					t.Fatalf("message %q does not mention %q", msg.Message, tc.wantInMsg)
				}
				return
			}
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, body %s", w.Code, w.Body)
			}
			if got := w.Header().Get("X-Parley-Version"); got != tc.wantVer {
				t.Fatalf("X-Parley-Version = %q, want %q", got, tc.wantVer)
			}
			if got := w.Header().Get("ETag"); got != `"`+tc.wantVer+`"` {
				t.Fatalf("ETag = %q", got)
			}
			var body putResponse
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Version == 0 {
				t.Fatalf("body %s: %v", w.Body, err)
			}
			if tc.wantCall != "" && e.kv.lastCall() != tc.wantCall {
				t.Fatalf("call = %s, want %s", e.kv.lastCall(), tc.wantCall)
			}
		})
	}
}

func TestServer_KVPutIdempotent(t *testing.T) {
	e := newEnv(t, Config{})
	for range 3 {
		w := e.do(t, http.MethodPut, "/api/v1/kv/a", "v", "Idempotency-Key", "same")
		if w.Code != 200 || w.Header().Get("X-Parley-Version") != "1" {
			t.Fatalf("retried PUT = %d version %q, want 200 and the first version 1", w.Code, w.Header().Get("X-Parley-Version"))
		}
	}
}

func TestServer_KVPutOversizeOverTheWire(t *testing.T) {
	e := newEnv(t, Config{})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	cases := []struct {
		name    string
		chunked bool
	}{{"content-length", false}, {"chunked", true}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.NewReader(strings.Repeat("x", 4096))
			req, err := http.NewRequest(http.MethodPut, srv.URL+"/api/v1/kv/big", body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.chunked {
				req.ContentLength = -1
				req.Body = io.NopCloser(struct{ io.Reader }{body}) // hide the length
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status = %d, want 413", resp.StatusCode)
			}
		})
	}
	if w := e.do(t, http.MethodGet, "/api/v1/kv/big", ""); w.Code != http.StatusNotFound {
		t.Fatalf("an oversize value was stored: GET = %d", w.Code)
	}
}

func TestServer_KVGet(t *testing.T) {
	e := newEnv(t, Config{})
	e.mustPut(t, "a/b", "hello")
	e.mustPut(t, "a/b", "hello again")
	e.kv.rep.StaleMs = 25
	t.Run("found", func(t *testing.T) {
		w := e.do(t, http.MethodGet, "/api/v1/kv/a/b", "")
		if w.Code != 200 || w.Body.String() != "hello again" {
			t.Fatalf("GET = %d %q", w.Code, w.Body)
		}
		h := w.Header()
		if h.Get("X-Parley-Version") != "2" || h.Get("ETag") != `"2"` || h.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("headers %v", h)
		}
		if h.Get("X-Parley-Modified-Ms") == "" || h.Get("Last-Modified") == "" {
			t.Fatalf("no modified time in %v", h)
		}
		if h.Get("X-Parley-Stale-Ms") != "" {
			t.Fatal("linearizable read has X-Parley-Stale-Ms")
		}
		if e.kv.lastCall() != `Get key="a/b" stale=false` {
			t.Fatalf("call %s", e.kv.lastCall())
		}
	})
	t.Run("stale", func(t *testing.T) {
		w := e.do(t, http.MethodGet, "/api/v1/kv/a/b?consistency=stale", "")
		if w.Code != 200 || w.Header().Get("X-Parley-Stale-Ms") != "25" {
			t.Fatalf("GET stale = %d, X-Parley-Stale-Ms %q", w.Code, w.Header().Get("X-Parley-Stale-Ms"))
		}
	})
	t.Run("explicit linearizable", func(t *testing.T) {
		if w := e.do(t, http.MethodGet, "/api/v1/kv/a/b?consistency=linearizable", ""); w.Code != 200 {
			t.Fatalf("GET = %d", w.Code)
		}
	})
	t.Run("bad consistency", func(t *testing.T) {
		w := e.do(t, http.MethodGet, "/api/v1/kv/a/b?consistency=eventual", "")
		if msg := mustErrorBody(t, w, 400, "invalid"); !strings.Contains(msg.Message, "consistency") {
			t.Fatalf("message %q does not name consistency", msg.Message)
		}
	})
	t.Run("missing", func(t *testing.T) {
		mustErrorBody(t, e.do(t, http.MethodGet, "/api/v1/kv/nope", ""), 404, "not_found")
	})
	t.Run("empty key", func(t *testing.T) {
		mustErrorBody(t, e.do(t, http.MethodGet, "/api/v1/kv/", ""), 400, "invalid")
	})
	t.Run("head", func(t *testing.T) {
		w := e.do(t, http.MethodHead, "/api/v1/kv/a/b", "")
		if w.Code != 200 || w.Header().Get("X-Parley-Version") != "2" {
			t.Fatalf("HEAD = %d %v", w.Code, w.Header())
		}
	})
}

func TestServer_KVDelete(t *testing.T) {
	cases := []struct {
		name       string
		headers    []string
		path       string
		wantStatus int
		wantCode   string
	}{
		{name: "ok", path: "a", wantStatus: 204},
		{name: "cas ok", path: "a", headers: []string{"If-Match", "1"}, wantStatus: 204},
		{name: "cas mismatch", path: "a", headers: []string{"If-Match", "2"}, wantStatus: 412, wantCode: "precondition_failed"},
		{name: "bad if-match", path: "a", headers: []string{"If-Match", "x"}, wantStatus: 400, wantCode: "invalid"},
		{name: "if-none-match", path: "a", headers: []string{"If-None-Match", "*"}, wantStatus: 400, wantCode: "invalid"},
		{name: "missing", path: "b", wantStatus: 404, wantCode: "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.mustPut(t, "a", "v")
			w := e.do(t, http.MethodDelete, "/api/v1/kv/"+tc.path, "", tc.headers...)
			if tc.wantStatus != 204 {
				mustErrorBody(t, w, tc.wantStatus, tc.wantCode)
				if g := e.do(t, http.MethodGet, "/api/v1/kv/a", ""); g.Code != 200 {
					t.Fatalf("a refused delete removed the key: GET = %d", g.Code)
				}
				return
			}
			if w.Code != 204 || w.Body.Len() != 0 {
				t.Fatalf("DELETE = %d %q", w.Code, w.Body)
			}
			if g := e.do(t, http.MethodGet, "/api/v1/kv/a", ""); g.Code != 404 {
				t.Fatalf("GET after DELETE = %d", g.Code)
			}
		})
	}
	t.Run("idempotency key passed", func(t *testing.T) {
		e := newEnv(t, Config{})
		e.mustPut(t, "a", "v")
		e.do(t, http.MethodDelete, "/api/v1/kv/a", "", "Idempotency-Key", "d1")
		if want := `Delete user="" key="a" if=0 idem="d1"`; e.kv.lastCall() != want {
			t.Fatalf("call %s, want %s", e.kv.lastCall(), want)
		}
		// The retry returns the first result rather than 404.
		if w := e.do(t, http.MethodDelete, "/api/v1/kv/a", "", "Idempotency-Key", "d1"); w.Code != 204 {
			t.Fatalf("retried DELETE = %d, want 204", w.Code)
		}
	})
}

func TestServer_KVList(t *testing.T) {
	e := newEnv(t, Config{})
	for _, k := range []string{"b/2", "a", "b/1", "c", "b/3"} {
		e.mustPut(t, k, "value-"+k)
	}
	e.mustPut(t, "a", "again")
	e.kv.rep.StaleMs = 11
	cases := []struct {
		name       string
		query      string
		want       []string
		wantStatus int
		wantInMsg  string
	}{
		{name: "all", query: "", want: []string{"a", "b/1", "b/2", "b/3", "c"}},
		{name: "prefix", query: "?prefix=b/", want: []string{"b/1", "b/2", "b/3"}},
		{name: "after", query: "?prefix=b/&after=b/1", want: []string{"b/2", "b/3"}},
		{name: "limit", query: "?limit=2", want: []string{"a", "b/1"}},
		{name: "none", query: "?prefix=zz", want: []string{}},
		{name: "bad limit", query: "?limit=ten", wantStatus: 400, wantInMsg: "limit"},
		{name: "negative limit", query: "?limit=-1", wantStatus: 400, wantInMsg: "limit"},
		{name: "limit over max", query: "?limit=101", wantStatus: 400, wantInMsg: "limit"},
		{name: "bad consistency", query: "?consistency=x", wantStatus: 400, wantInMsg: "consistency"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := e.do(t, http.MethodGet, "/api/v1/kv"+tc.query, "")
			if tc.wantStatus != 0 {
				if msg := mustErrorBody(t, w, tc.wantStatus, "invalid"); !strings.Contains(msg.Message, tc.wantInMsg) {
					t.Fatalf("message %q does not name %q", msg.Message, tc.wantInMsg)
				}
				return
			}
			var body struct {
				Keys []struct {
					Key     string `json:"key"`
					Version uint64 `json:"version"`
					Size    int    `json:"size"`
				} `json:"keys"`
			}
			if w.Code != 200 {
				t.Fatalf("status %d %s", w.Code, w.Body)
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Keys == nil {
				t.Fatalf("body %s: %v", w.Body, err)
			}
			got := []string{}
			for _, k := range body.Keys {
				got = append(got, k.Key)
				wantVer, wantSize := uint64(1), len("value-"+k.Key)
				if k.Key == "a" {
					wantVer, wantSize = 2, len("again")
				}
				if k.Version != wantVer || k.Size != wantSize {
					t.Fatalf("key %+v: want version %d size %d", k, wantVer, wantSize)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("keys %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("stale", func(t *testing.T) {
		w := e.do(t, http.MethodGet, "/api/v1/kv?consistency=stale&limit=1", "")
		if w.Code != 200 || w.Header().Get("X-Parley-Stale-Ms") != "11" {
			t.Fatalf("stale list = %d, X-Parley-Stale-Ms %q", w.Code, w.Header().Get("X-Parley-Stale-Ms"))
		}
		if want := `List prefix="" after="" limit=1 stale=true`; e.kv.lastCall() != want {
			t.Fatalf("call %s, want %s", e.kv.lastCall(), want)
		}
	})
}

func FuzzParseIfMatch(f *testing.F) {
	for _, s := range []string{"", "1", `"7"`, "0", "-1", "*", "18446744073709551616", ` "3" `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r := httptest.NewRequest(http.MethodPut, "/api/v1/kv/a", nil)
		r.Header.Set("If-Match", h)
		v, err := parseIfMatch(r)
		if err == nil && v == 0 && strings.TrimSpace(r.Header.Get("If-Match")) != "" {
			t.Fatalf("If-Match %q accepted as unconditional", h)
		}
	})
}
