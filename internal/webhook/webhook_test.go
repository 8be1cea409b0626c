package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/poll"
)

func TestGuard_CheckURL(t *testing.T) {
	allow, err := ParseCIDRs([]string{"10.9.0.0/16", "fd00::5"})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGuard(allow, func() []string { return []string{"203.0.113.7:7070", "[2001:db8::1]:7071"} })
	for _, tc := range []struct {
		url  string
		code errs.Code // "" allowed
		says string
	}{
		{"https://93.184.215.14/hook", "", ""},
		{"http://[2606:4700::1111]:8080/x?y=1", "", ""},
		{"http://10.9.3.4/allowed-range", "", ""},
		{"http://[fd00::5]/allowed-address", "", ""},
		{"http://203.0.113.7:7071/other-port", "", ""},
		{"http://10.0.0.1/", errs.Forbidden, "private"},
		{"http://172.16.5.5/", errs.Forbidden, "private"},
		{"http://192.168.0.1/", errs.Forbidden, "private"},
		{"http://127.0.0.1:9000/", errs.Forbidden, "loopback"},
		{"http://[::1]/", errs.Forbidden, "loopback"},
		{"http://[::ffff:127.0.0.1]/", errs.Forbidden, "loopback"},
		{"http://169.254.169.254/latest/meta-data/", errs.Forbidden, "link-local"},
		{"http://[fe80::1%25eth0]/", errs.Forbidden, "link-local"},
		{"http://0.0.0.0/", errs.Forbidden, "unspecified"},
		{"http://[::]/", errs.Forbidden, "unspecified"},
		{"http://100.64.1.1/", errs.Forbidden, "carrier-grade NAT"},
		{"http://224.0.0.1/", errs.Forbidden, "multicast"},
		{"http://[fc00::1]/", errs.Forbidden, "unique local"},
		{"http://[64:ff9b::a00:1]/", errs.Forbidden, "NAT64"},
		{"http://203.0.113.7:7070/api", errs.Forbidden, "own addresses"},
		{"http://[2001:db8::1]:7071/", errs.Forbidden, "own addresses"},
		{"ftp://93.184.215.14/", errs.Invalid, "scheme"},
		{"https://u:p@93.184.215.14/", errs.Invalid, "user information"},
		{"https:///nohost", errs.Invalid, "host"},
		{"not a url", errs.Invalid, ""},
		{"https://no-such-host.invalid/", errs.Invalid, "does not resolve"},
	} {
		err := g.CheckURL(context.Background(), tc.url)
		if got := errs.CodeOf(err); (tc.code == "" && err != nil) || (tc.code != "" && got != tc.code) || !strings.Contains(errString(err), tc.says) {
			t.Errorf("CheckURL(%q) = %v, want code %q saying %q", tc.url, err, tc.code, tc.says)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseCIDRs(t *testing.T) {
	got, err := ParseCIDRs([]string{"127.0.0.0/8", " 10.1.2.3 ", "", "fd00::/8"})
	if err != nil || len(got) != 3 || got[1] != netip.MustParsePrefix("10.1.2.3/32") {
		t.Fatalf("ParseCIDRs = %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0"} {
		if _, err := ParseCIDRs([]string{bad}); err == nil {
			t.Errorf("ParseCIDRs(%q) accepted", bad)
		}
	}
}

func TestSign_Verify(t *testing.T) {
	body := []byte(`{"id":"x-1"}`)
	now := time.Unix(1_700_000_000, 0)
	sig := Sign("s3cret", now.Unix(), body)
	// The recipe of docs/API.md, independently: HMAC-SHA256 of "<ts>.<body>".
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte("1700000000." + string(body)))
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Fatalf("signature %q, want %q", sig, want)
	}
	ts := "1700000000"
	for _, tc := range []struct {
		secret, ts, sig string
		body            []byte
		at              time.Time
		want            error
	}{
		{"s3cret", ts, sig, body, now, nil},
		{"s3cret", ts, sig, body, now.Add(4 * time.Minute), nil},
		{"other", ts, sig, body, now, ErrBadSignature},
		{"s3cret", ts, sig, []byte(`{"id":"x-2"}`), now, ErrBadSignature},
		{"s3cret", "1700000001", sig, body, now, ErrBadSignature},
		{"s3cret", ts, strings.TrimPrefix(sig, "sha256="), body, now, ErrBadSignature},
		{"s3cret", "soon", sig, body, now, ErrBadSignature},
		{"s3cret", ts, sig, body, now.Add(6 * time.Minute), ErrStale},
	} {
		if err := Verify(tc.secret, tc.ts, tc.sig, tc.body, tc.at, 5*time.Minute); err != tc.want {
			t.Errorf("Verify(%q, %q, %q) = %v, want %v", tc.secret, tc.ts, tc.body, err, tc.want)
		}
	}
}

// fakeSource is an outbox of fixed deliveries that records outcomes.
type fakeSource struct {
	mu      sync.Mutex
	due     []chat.Delivery
	records []record
}

type record struct {
	d      chat.Delivery
	status int
	err    string
	ok     bool
}

func (f *fakeSource) DueDeliveries(_ context.Context, _ uint64, _ int64, limit int, skip func(chat.Delivery) bool) ([]chat.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []chat.Delivery
	for _, d := range f.due {
		if len(out) < limit && !skip(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

func (f *fakeSource) RecordDelivery(_ context.Context, _ uint64, d chat.Delivery, status int, errText string, ok bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, record{d, status, errText, ok})
	for i, x := range f.due {
		if x.Payload.ID == d.Payload.ID {
			f.due = append(f.due[:i], f.due[i+1:]...)
			break
		}
	}
	return nil
}

func (f *fakeSource) recorded() []record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]record(nil), f.records...)
}

func delivery(url string, seq uint64) chat.Delivery {
	id := chat.DeliveryID("0123456789abcdef", seq)
	return chat.Delivery{Room: "ops", Hook: "0123456789abcdef", Seq: seq, Attempt: 1, URL: url, Secret: "s3cret",
		Payload: chat.Payload{ID: id, Hook: "0123456789abcdef", Room: "ops", Seq: seq, Sender: "bob", Text: "deploy"}}
}

func TestDispatcher(t *testing.T) {
	var mu sync.Mutex
	var got []chat.Payload
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := Verify("s3cret", r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature), body, time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var p chat.Payload
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
		switch r.URL.Path {
		case "/fail":
			http.Error(w, strings.Repeat("x", 1<<20), http.StatusInternalServerError)
		case "/redirect":
			http.Redirect(w, r, "http://10.0.0.1/", http.StatusFound)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()
	allowLoopback, _ := ParseCIDRs([]string{"127.0.0.0/8", "::1"})
	src := &fakeSource{due: []chat.Delivery{
		delivery(srv.URL+"/ok", 1), delivery(srv.URL+"/fail", 2), delivery(srv.URL+"/redirect", 3),
		{Room: "ops", Hook: "0123456789abcdef", Seq: 4, Attempt: 1, Drop: "the message was deleted", Payload: chat.Payload{ID: chat.DeliveryID("0123456789abcdef", 4)}},
	}}
	d := NewDispatcher(src, NewGuard(allowLoopback, nil), Config{})
	// The same guard without the allowance refuses at dial time what a
	// hook's URL named when it was allowed (DNS rebinding, an allowance
	// withdrawn).
	strict := &fakeSource{due: []chat.Delivery{delivery(srv.URL+"/ok", 5)}}
	ds := NewDispatcher(strict, NewGuard(nil, nil), Config{})
	ctx := context.Background()
	poll.Until(t, 10*time.Second, "every delivery recorded", func() error {
		if err := d.Dispatch(ctx, 1); err != nil {
			return err
		}
		if err := ds.Dispatch(ctx, 1); err != nil {
			return err
		}
		if n := len(src.recorded()) + len(strict.recorded()); n < 5 {
			return errs.New(errs.Unavailable, "%d recorded", n)
		}
		return nil
	})
	d.Wait()
	ds.Wait()
	bySeq := map[uint64]record{}
	for _, r := range append(src.recorded(), strict.recorded()...) {
		if _, dup := bySeq[r.d.Seq]; dup {
			t.Fatalf("seq %d attempted twice while in flight", r.d.Seq)
		}
		bySeq[r.d.Seq] = r
	}
	if r := bySeq[1]; !r.ok || r.status != 200 {
		t.Errorf("ok: %+v", r)
	}
	if r := bySeq[2]; r.ok || r.status != 500 || !strings.Contains(r.err, "500") {
		t.Errorf("fail: %+v", r)
	}
	if r := bySeq[3]; r.ok || r.status != http.StatusFound {
		t.Errorf("redirect followed or taken for success: %+v", r)
	}
	if r := bySeq[4]; r.ok || r.status != 0 {
		t.Errorf("dropped: %+v", r)
	}
	if r := bySeq[5]; r.ok || r.status != 0 || !strings.Contains(r.err, "loopback") {
		t.Errorf("dial-time refusal: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3 (no drop, no refused dial, no redirect followed): %+v", len(got), got)
	}
}

// TestDispatcher_PerHook: a slow receiver holds at most PerHook of the
// node's attempts; another hook's deliveries go on meanwhile, though the
// slow hook's backlog comes first in the outbox and fills a whole read.
func TestDispatcher_PerHook(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	slow, fast := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.URL.Path == "/slow" {
			slow++
			mu.Unlock()
			<-release
			return
		}
		fast++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before srv.Close, which waits for the handlers
	allow, _ := ParseCIDRs([]string{"127.0.0.0/8"})
	src := &fakeSource{}
	for seq := uint64(1); seq <= 6; seq++ {
		src.due = append(src.due, delivery(srv.URL+"/slow", seq))
	}
	other := delivery(srv.URL+"/fast", 7)
	other.Hook = "fedcba9876543210"
	other.Payload.ID = chat.DeliveryID(other.Hook, 7)
	src.due = append(src.due, other)
	d := NewDispatcher(src, NewGuard(allow, nil), Config{PerHook: 2, Concurrency: 3})
	poll.Until(t, 10*time.Second, "two slow attempts in flight and the other hook delivered", func() error {
		if err := d.Dispatch(context.Background(), 1); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if slow != 2 || fast != 1 {
			return errs.New(errs.Unavailable, "slow %d, fast %d", slow, fast)
		}
		return nil
	})
	for range 5 {
		if err := d.Dispatch(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	n := slow
	mu.Unlock()
	unblock()
	d.Wait()
	if n != 2 {
		t.Fatalf("%d attempts in flight to the slow hook, want 2", n)
	}
}
