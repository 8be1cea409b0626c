package testcluster_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// netLog collects the URL of every request and WebSocket a page opens.
type netLog struct {
	mu   sync.Mutex
	urls []string
}

// add is a chromedp listener: it must return at once.
func (l *netLog) add(ev any) {
	var u string
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		u = e.Request.Method + " " + e.Request.URL
	case *network.EventWebSocketCreated:
		u = "WS " + e.URL
	default:
		return
	}
	l.mu.Lock()
	l.urls = append(l.urls, u)
	l.mu.Unlock()
}

// hosts returns the host:port of every request, in order, each once.
func (l *netLog) hosts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.urls {
		_, raw, _ := strings.Cut(s, " ")
		u, err := url.Parse(raw)
		if err != nil || u.Scheme == "data" {
			continue
		}
		if !slices.Contains(out, u.Host) {
			out = append(out, u.Host)
		}
	}
	return out
}

// rogue serves whatever address it is given and records every request
// made to it, as a rogue on a former member's address would.
type rogue struct {
	mu  sync.Mutex
	got []string
}

// serve listens on addr until the test ends.
func (r *rogue) serve(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the dead node's address %s: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, fmt.Sprintf("%s %s (Authorization %q, Upgrade %q)", req.Method, req.URL, req.Header.Get("Authorization"), req.Header.Get("Upgrade")))
		r.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func (r *rogue) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// nodeState returns the state GET /api/v1/cluster gives node id ("" when
// it is not in the map).
func nodeState(t *testing.T, cl *client.Client, id string) string {
	t.Helper()
	st, err := cl.Cluster(apiCtx(t))
	if err != nil {
		t.Fatalf("cluster map: %v", err)
	}
	for _, n := range st.Nodes {
		if n.ID == id {
			return n.State
		}
	}
	return ""
}

// TestWeb_BrowserFailover drives the web app while the page's own node
// dies, in a cluster whose map still lists a member that is not alive (a
// killed standby node, first in the map) whose address a rogue now serves.
// Every call of the app must fail over to the alive members as the stream
// does, so a message is still sent; and the app must never contact the
// member that is not alive, nor anything but the alive members, so no
// token leaves the cluster.
func TestWeb_BrowserFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	var requests netLog
	if err := chromedp.Listen(b.ctx, requests.add); err != nil {
		t.Fatal(err)
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 4, ReplicationFactor: 3, NoSync: true,
		Configure: func(i int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			if i == 3 {
				// First in the map (sorted by id), and holding no replica,
				// so that the page's node may die too.
				cfg.ID, cfg.Standby = "n0", true
			}
		}})
	var addrs []string
	for i := range c.Len() {
		addrs = append(addrs, c.Node(i).HTTPAddr())
	}
	base := "http://" + addrs[0]
	if !streamServed(t, base) {
		t.Skip("GET /api/v1/stream answers 404 on this build")
	}
	carol := signUp(t, c, 1, 1, "carol")
	S := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	b.do("log in", chromedp.Navigate(base+"/#/login"),
		chromedp.SendKeys(S("input[name=username]"), "carol"),
		chromedp.SendKeys(S("input[name=password]"), password("carol")),
		chromedp.Click(S("form.auth button[type=submit]")),
		chromedp.WaitVisible(S("form.create-room")))
	b.do("create a room",
		chromedp.SendKeys(S("input[name=room]"), "ops"),
		chromedp.Click(S("form.create-room button[type=submit]")),
		chromedp.WaitVisible(S(".room textarea[name=text]")))

	// n0 dies and stays in the map; a rogue takes its address.
	c.Kill(3)
	deadline := time.Now().Add(30 * time.Second)
	for nodeState(t, carol, "n0") == "alive" {
		if time.Now().After(deadline) {
			t.Fatal("n0 still alive in the map 30 s after it was killed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var r rogue
	r.serve(t, addrs[3])

	// The page loads again and learns the map that lists n0.
	b.do("reload the room", chromedp.Evaluate[chromedp.Void](`sessionStorage.clear()`),
		chromedp.Navigate(base+"/?again#/room/ops"))
	b.waitFor("the room live over the stream", `document.querySelector('.mode') !== null && document.querySelector('.mode').dataset.mode === 'live'`)
	b.waitFor("the cluster's nodes learned", `sessionStorage.getItem('parley.nodes') !== null`)
	learned, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`sessionStorage.getItem('parley.nodes')`))
	if err != nil {
		t.Fatal(err)
	}
	state := nodeState(t, carol, "n0")
	t.Logf("the page learned %s while the map gave n0 (%s) the state %q", learned, addrs[3], state)
	if state == "" || state == "alive" {
		t.Fatalf("n0 is %q in the map; the test needs it listed and not alive", state)
	}

	c.Kill(0)
	defer func() { // also when a step below fails
		if got := r.requests(); len(got) != 0 {
			t.Errorf("the page contacted n0, which is not alive (a rogue on its address got the token?): %q", got)
		}
		hosts := requests.hosts()
		for _, h := range hosts {
			if !slices.Contains(addrs[:3], h) {
				t.Errorf("the page contacted %s, not an alive member (members %q)", h, addrs[:3])
			}
		}
		if !slices.Contains(hosts, addrs[1]) && !slices.Contains(hosts, addrs[2]) {
			t.Errorf("the page contacted only %q: no failover to another node", hosts)
		}
	}()
	b.do("send while the page's node is down",
		chromedp.SendKeys(S("textarea[name=text]"), "sent while n1 is down"),
		chromedp.Click(S(".composer button[type=submit]")))
	b.waitFor("the message sent through another node", hasText(".events .msg .text", "sent while n1 is down"))
	if _, err := carol.Post(apiCtx(t), "ops", "posted through n2", client.PostOptions{}); err != nil {
		t.Fatalf("post through n2: %v", err)
	}
	b.waitFor("another node's message shown", hasText(".events .msg .text", "posted through n2"))
	b.waitFor("the stream resumed through another node", `document.querySelector('.mode').dataset.mode === 'live' &&
		document.getElementById('banner').textContent.startsWith('Live updates resumed through ')`)

	evs, err := carol.History(apiCtx(t), "ops", client.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, ev := range evs {
		if ev.Text == "sent while n1 is down" {
			sent++
		}
	}
	if sent != 1 {
		t.Errorf("the message is %d times in the room's history, want once", sent)
	}
	b.checkConsole()
}
