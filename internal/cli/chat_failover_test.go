package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

func TestFailoverServers(t *testing.T) {
	nodes := []client.NodeStatus{
		{ID: "n1", Addr: "10.0.0.1:7070", State: "alive"},
		{ID: "rogue", Addr: "10.6.6.6:7070", State: "unreachable"},
		{ID: "n3", Addr: "10.0.0.3:7070", State: "suspect"},
		{ID: "n4", Addr: "10.0.0.4:7070", State: "dead"},
		{ID: "n5", Addr: "10.0.0.5:7070", State: "draining"},
		{ID: "n6", Addr: "10.0.0.6:7070", State: "unknown"},
		{ID: "n7", Addr: "10.0.0.7:7070", State: "alive"},
		{ID: "n8", Addr: "0.0.0.0:7078", State: "alive"},
	}
	for _, tc := range []struct {
		name    string
		base    string
		servers []string
		want    []string
	}{
		{"alive nodes only, after --server", "http://10.0.0.1:7070", []string{"http://10.0.0.1:7070"},
			[]string{"http://10.0.0.1:7070", "http://10.0.0.7:7070", "http://10.0.0.1:7078"}},
		{"in --server's scheme", "https://10.0.0.7:7070", []string{"https://10.0.0.7:7070"},
			[]string{"https://10.0.0.7:7070", "https://10.0.0.1:7070", "https://10.0.0.7:7078"}},
		{"known ones once", "http://10.0.0.1:7070", []string{"http://10.0.0.1:7070", "http://10.0.0.7:7070"},
			[]string{"http://10.0.0.1:7070", "http://10.0.0.7:7070", "http://10.0.0.1:7078"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := url.Parse(tc.base)
			if err != nil {
				t.Fatal(err)
			}
			self := map[string]bool{base.Host: true}
			got := failoverServers(slices.Clone(tc.servers), base, self, &client.ClusterStatus{Nodes: nodes})
			if !slices.Equal(got, tc.want) {
				t.Errorf("failoverServers = %q, want %q", got, tc.want)
			}
		})
	}
}

// recorder is an HTTP server that notes every request's method, path and
// Authorization header.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Method+" "+req.URL.Path+" auth="+req.Header.Get("Authorization"))
		r.mu.Unlock()
		h(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *recorder) addr() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// TestChatSession_FailoverAliveOnly runs the chat's failover against a
// cluster map that lists a rogue address as unreachable before an alive
// node: the chat moves to the alive node, asks it whether it is ready
// without the token, and never contacts the rogue.
func TestChatSession_FailoverAliveOnly(t *testing.T) {
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	rogue := newRecorder(t, ok) // answers ready, as a rogue would
	good := newRecorder(t, ok)
	var first *recorder
	first = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(client.ClusterStatus{Nodes: []client.NodeStatus{
			{ID: "n1", Addr: first.addr(), State: "alive"},
			{ID: "rogue", Addr: rogue.addr(), State: "unreachable"},
			{ID: "n3", Addr: good.addr(), State: "alive"},
		}})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := &syncBuffer{}
	s := &chatSession{
		e:        &Env{Stdout: io.Discard, Stderr: io.Discard},
		screen:   newPlainScreen(nil, out),
		token:    "secret-token",
		servers:  []string{first.srv.URL},
		c:        client.New(first.srv.URL, client.WithToken("secret-token")),
		clientOf: (&clientOptions{}).clientOf,
	}
	s.learnNodes(ctx, &clientOptions{Server: first.srv.URL, Timeout: 5 * time.Second, Token: "secret-token"})
	if want := []string{first.srv.URL, good.srv.URL}; !slices.Equal(s.servers, want) {
		t.Fatalf("servers %q, want %q", s.servers, want)
	}
	refused := &url.Error{Op: "Get", URL: first.srv.URL + "/api/v1/stream", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	if err := s.failover(ctx, s.c, fmt.Errorf("%w: %w", errStreamLost, refused)); err != nil {
		t.Fatal(err)
	}
	want := "-- lost the connection to " + first.srv.URL + " (it refused the connection); trying the other nodes\n" +
		"-- reconnected to " + good.srv.URL + "; resuming after #0\n"
	if got := out.String(); got != want {
		t.Errorf("failover printed %q, want %q: a sentence, not a Go error", got, want)
	}
	if got := s.servers[s.cur]; got != good.srv.URL {
		t.Errorf("moved to %s, want %s", got, good.srv.URL)
	}
	if got := rogue.requests(); len(got) != 0 {
		t.Errorf("the rogue was contacted: %q", got)
	}
	if got := good.requests(); len(got) != 1 || got[0] != "GET /readyz auth=" {
		t.Errorf("the alive node got %q, want one GET /readyz without the token", got)
	}
	if s.client().Token() != "secret-token" {
		t.Error("the client of the new node is not signed in")
	}
}
