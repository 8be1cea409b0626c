package testcluster_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// screenshotDir, when set, is where the browser test saves its screenshots
// of the room view and the dashboard (the README's are made with
// -web.screenshots=../../docs/web); otherwise they go to a temporary
// directory.
var screenshotDir = flag.String("web.screenshots", "", "directory for the web app's screenshots")

// chromiumPath finds a Chromium to drive: $PARLEY_CHROMIUM, or the usual
// names on PATH (Debian's package installs "chromium").
func chromiumPath() string {
	if p := os.Getenv("PARLEY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestWeb_ServedBesideAPI checks a node serves the app at / and keeps JSON
// answers for the API's paths, including unknown ones.
func TestWeb_ServedBesideAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 1, ReplicationFactor: 1, NoSync: true})
	base := "http://" + c.Node(0).HTTPAddr()
	for _, tc := range []struct {
		path, contentType string
		status            int
	}{
		{"/", "text/html; charset=utf-8", 200},
		{"/js/app.js", "text/javascript; charset=utf-8", 200},
		{"/api/v1/no-such-route", "application/json", 404},
		{"/api/v1/rooms", "application/json", 401},
		{"/healthz", "text/plain; charset=utf-8", 200},
	} {
		res, err := http.Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || res.Header.Get("Content-Type") != tc.contentType {
			t.Errorf("GET %s: %d %q, want %d %q (%s)", tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.status, tc.contentType, b)
		}
		if tc.contentType == "application/json" && !json.Valid(b) {
			t.Errorf("GET %s: body is not JSON: %s", tc.path, b)
		}
	}
}

// browser drives one headless Chromium tab and collects what the page
// writes to its console.
type browser struct {
	t   *testing.T
	ctx context.Context
	mu  sync.Mutex
	log []chromedp.ConsoleMessage
}

// newBrowser starts Chromium for the test (skipping it when there is none).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no chromium found (apt-get install -y chromium, or set PARLEY_CHROMIUM): skipping the browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1100, 700),
		chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	return watch(ctx, t, "start chromium "+path)
}

// tab opens another tab of b's Chromium for t (a subtest, say): cheaper
// than a browser of its own. The tab closes when t ends.
func (b *browser) tab(t *testing.T) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	return watch(ctx, t, "open a tab")
}

// watch opens the tab of ctx and collects its console for t.
func watch(ctx context.Context, t *testing.T, what string) *browser {
	t.Helper()
	b := &browser{t: t, ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // starts the browser or opens the tab
		t.Fatalf("%s: %v", what, err)
	}
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.log = append(b.log, m)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			b.mu.Lock()
			defer b.mu.Unlock()
			for _, m := range b.log {
				t.Logf("console: %s", m)
			}
		}
	})
	return b
}

// do runs steps with a generous deadline, failing the test on error.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := b.try(steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// try runs steps with do's deadline and returns their error.
func (b *browser) try(steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, 45*time.Second)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// waitFor polls a JavaScript expression until it is true. When it never
// is, the test fails with what the page showed then.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	err := b.try(chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(40*time.Second)))
	if err != nil {
		b.t.Fatalf("%s: %v\n%s", what, err, b.pageState())
	}
}

// pageState describes what the page shows, for a failure's message: the
// focused element and the end of the page's text.
func (b *browser) pageState() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const a = document.activeElement;
		const focus = a ? a.tagName.toLowerCase() + (a.name ? '[name=' + a.name + ']' : '') + (a.disabled ? ' (disabled)' : '') : 'none';
		const text = document.body ? document.body.innerText : '';
		return 'location: ' + location.hash + '\nfocus: ' + focus + '\npage text (its end):\n' + text.slice(-1500);
	})()`))
	if err != nil {
		return "page state unknown: " + err.Error()
	}
	return state
}

// tryWaitFor polls a JavaScript expression until it is true, for at most
// d; false when it never was.
func (b *browser) tryWaitFor(expr string, d time.Duration) bool {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, d+5*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(d)))
	return err == nil
}

// screenshot saves the viewport as name.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := *screenshotDir
	if dir == "" {
		dir = b.t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// checkConsole fails the test on an uncaught exception or a Content
// Security Policy violation in the page.
func (b *browser) checkConsole() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.log {
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			b.t.Errorf("page console: %s", m)
		}
	}
}

// js quotes s as a JavaScript string literal.
func js(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// hasText is an expression true when an element matching sel has exactly
// the text s.
func hasText(sel, s string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.textContent.trim() === %s)`, js(sel), js(s))
}

// clear empties an input (chromedp.SetValue refuses the empty string).
func clear(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%s).value = ''`, js(sel)))
}

// TestWeb_Browser drives the web app in headless Chromium against a real
// three-node cluster: sign-up with inline validation, login, a room with
// messages (one posted by another user through another node, which must
// appear without a reload, by the stream or by the polling fallback), a
// whisper, the room on a phone's screen, unread counts, a private room, a
// queue, a short link and the dashboard; with the stream served, the room
// resuming through another node when the page's node dies.
func TestWeb_Browser(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := newAPICluster(t, 3, 3)
	base := "http://" + c.Node(0).HTTPAddr()
	S := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	b.do("open the sign-up form", chromedp.Navigate(base+"/#/signup"), chromedp.WaitVisible(S("form.auth")))
	b.do("submit a short password",
		chromedp.SendKeys(S("input[name=username]"), "alice"),
		chromedp.SendKeys(S("input[name=password]"), "short"),
		chromedp.SendKeys(S("input[name=password2]"), "short"),
		chromedp.Click(S("form.auth button[type=submit]")))
	b.waitFor("inline error for the short password", hasText(".field-error", "At least 8 characters."))
	b.do("sign up",
		clear("input[name=password]"), chromedp.SendKeys(S("input[name=password]"), password("alice")),
		clear("input[name=password2]"), chromedp.SendKeys(S("input[name=password2]"), password("alice")),
		chromedp.Click(S("form.auth button[type=submit]")),
		chromedp.WaitVisible(S("form.create-room")))

	b.do("log out", chromedp.Click(S("#logout")), chromedp.WaitVisible(S("form.auth input[name=username]")))
	b.do("log in",
		chromedp.SendKeys(S("input[name=username]"), "alice"),
		chromedp.SendKeys(S("input[name=password]"), password("alice")),
		chromedp.Click(S("form.auth button[type=submit]")),
		chromedp.WaitVisible(S("form.create-room")))

	b.do("create a room",
		chromedp.SendKeys(S("input[name=room]"), "Lobby"),
		chromedp.Click(S("form.create-room button[type=submit]")),
		chromedp.WaitVisible(S(".room textarea[name=text]")))
	b.waitFor("the room view", hasText(".room-head h1", "#lobby"))
	b.do("post a message",
		chromedp.SendKeys(S("textarea[name=text]"), "hello from alice"),
		chromedp.Click(S(".composer button[type=submit]")))
	b.waitFor("alice's message", hasText(".events .msg .text", "hello from alice"))

	// Bob posts through another node; alice's page must show it by itself.
	bob := signUp(t, c, 1, 2, "bob")
	if _, err := bob.JoinRoom(apiCtx(t), "lobby", ""); err != nil {
		t.Fatalf("bob joins: %v", err)
	}
	b.waitFor("bob's join notice", `[...document.querySelectorAll('.events .notice')].some((e) => e.textContent.startsWith('bob joined'))`)
	if _, err := bob.Post(apiCtx(t), "lobby", "hi alice, bob here", client.PostOptions{}); err != nil {
		t.Fatalf("bob posts: %v", err)
	}
	b.waitFor("bob's message, live", hasText(".events .msg .text", "hi alice, bob here"))
	if _, err := bob.Post(apiCtx(t), "lobby", "just for you", client.PostOptions{To: []string{"alice"}}); err != nil {
		t.Fatalf("bob whispers: %v", err)
	}
	b.waitFor("bob's whisper, marked", `[...document.querySelectorAll('.events .msg.whisper')].some((e) =>
		e.querySelector('.text').textContent === 'just for you' && e.querySelector('.whisper-tag').textContent === 'whisper to you')`)
	b.waitFor("bob among the members", hasText(".members .member", "bob"))
	for _, text := range []string{"release 1.4 is cut", "the notes are in the KV store under release/1.4"} {
		if _, err := bob.Post(apiCtx(t), "lobby", text, client.PostOptions{}); err != nil {
			t.Fatalf("bob posts: %v", err)
		}
	}
	b.waitFor("bob's two messages, the second under the first", `(() => { const m = [...document.querySelectorAll('.events .msg')];
		return m.length >= 2 && m[m.length - 1].classList.contains('cont') && !m[m.length - 2].classList.contains('cont'); })()`)
	b.do("reply",
		chromedp.SendKeys(S("textarea[name=text]"), "great, starting the rollout now"),
		chromedp.Click(S(".composer button[type=submit]")))
	b.waitFor("alice's reply", hasText(".events .msg .text", "great, starting the rollout now"))
	b.screenshot("room")

	// On a phone the room still fits: nothing scrolls sideways and the
	// input is on screen.
	b.do("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile, chromedp.EmulatePortrait))
	b.waitFor("the room fits a phone", `document.documentElement.scrollWidth <= innerWidth &&
		document.querySelector('.composer').getBoundingClientRect().bottom <= innerHeight &&
		document.querySelector('.events').getBoundingClientRect().width > 300`)
	time.Sleep(300 * time.Millisecond) // nothing to wait for: a late layout change
	b.check("the room on a phone", newestShown)
	b.screenshot("room-phone")
	b.do("back to a desktop screen", chromedp.EmulateViewport(1100, 700))

	// The rooms list counts what alice has not seen, and a private room
	// (listed only to its members) is joined by name and password.
	b.do("open the rooms list", chromedp.Navigate(base+"/#/rooms"), chromedp.WaitVisible(S("form.join-private")))
	for _, text := range []string{"unread one", "unread two"} {
		if _, err := bob.Post(apiCtx(t), "lobby", text, client.PostOptions{}); err != nil {
			t.Fatalf("bob posts: %v", err)
		}
	}
	b.waitFor("two unread in the lobby", hasText(`.room-row[data-room="lobby"] .badge`, "2"))
	if _, err := bob.CreateRoom(apiCtx(t), client.RoomSpec{Name: "secret", Private: true, Password: "open sesame"}); err != nil {
		t.Fatalf("bob creates a private room: %v", err)
	}
	b.do("join with a wrong password",
		chromedp.SendKeys(S("input[name=join-room]"), "secret"),
		chromedp.SendKeys(S("input[name=join-password]"), "not it at all"),
		chromedp.Click(S("form.join-private button[type=submit]")))
	b.waitFor("the wrong password refused", hasText(".join-private .field-error", "Wrong password."))
	b.do("join with the password",
		clear("input[name=join-password]"), chromedp.SendKeys(S("input[name=join-password]"), "open sesame"),
		chromedp.Click(S("form.join-private button[type=submit]")))
	b.waitFor("the private room", hasText(".room-head h1", "#secret"))
	b.do("back to the rooms list", chromedp.Navigate(base+"/#/rooms"))
	b.waitFor("the private room listed with a lock", `document.querySelector('.room-row[data-room="secret"] .lock') !== null`)

	b.do("open the queues page", chromedp.Navigate(base+"/#/queues"), chromedp.WaitVisible(S("form.inline-form input")))
	b.do("create a queue", chromedp.SendKeys(S("form.inline-form input"), "jobs"), chromedp.Click(S("form.inline-form button")))
	b.waitFor("the queue listed", `document.querySelector('tr[data-queue="jobs"]') !== null`)
	b.do("send and receive",
		chromedp.Click(S(`tr[data-queue="jobs"] button`)),
		chromedp.SendKeys(S(".queue-detail textarea"), "job one"),
		chromedp.Click(S(".queue-detail form button[type=submit]")))
	b.waitFor("the send acknowledged", `document.querySelector('.queue-out').textContent.startsWith('Sent message')`)
	b.do("receive", chromedp.Click(S(".queue-detail .buttons button.primary")))
	b.waitFor("the message received", hasText(".queue-msg .text", "job one"))

	b.do("open the links page", chromedp.Navigate(base+"/#/links"), chromedp.WaitVisible(S("input[name=url]")))
	b.do("shorten a bad URL", chromedp.SendKeys(S("input[name=url]"), "not a url"), chromedp.Click(S("form.stack button[type=submit]")))
	b.waitFor("inline error for the bad URL", `document.querySelector('input[name=url]').getAttribute('aria-invalid') === 'true'`)
	long := "https://example.com/a/rather/long/path?x=1"
	b.do("shorten a URL",
		clear("input[name=url]"), chromedp.SendKeys(S("input[name=url]"), long),
		chromedp.Click(S("form.stack button[type=submit]")))
	b.waitFor("the short link", `document.querySelector('.short-result a.short') !== null`)
	short, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('.short-result a.short').href`))
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor("the link among mine", hasText(".links-mine .long-url span", long))
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Get(short)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != long {
		t.Errorf("GET %s: %d to %q, want 302 to %q", short, res.StatusCode, res.Header.Get("Location"), long)
	}

	b.do("open the dashboard", chromedp.Navigate(base+"/#/cluster"))
	b.waitFor("three nodes", `document.querySelectorAll('.dash-nodes tbody tr').length === 3`)
	b.waitFor("every partition with a leader", `(() => { const rows = [...document.querySelectorAll('.dash-parts tbody tr')];
		return rows.length > 0 && rows.every((r) => r.querySelector('.replica.leader')); })()`)
	b.waitFor("the request rates charted", `document.querySelectorAll('.dash-rate .spark polyline').length === 3`)
	b.screenshot("dashboard")
	b.checkConsole()

	// With the stream served, the room resumes on another node when the
	// page's own node dies.
	if !streamServed(t, base) {
		t.Log("GET /api/v1/stream answers 404 on this build: skipping the failover check")
		return
	}
	b.do("back to the room", chromedp.Navigate(base+"/#/room/lobby"))
	b.waitFor("the room live over the stream", `document.querySelector('.mode').dataset.mode === 'live'`)
	c.Kill(0)
	if _, err := bob.Post(apiCtx(t), "lobby", "after the failover", client.PostOptions{}); err != nil {
		t.Fatalf("bob posts after n1 died: %v", err)
	}
	b.waitFor("the message through another node", hasText(".events .msg .text", "after the failover"))
	b.checkConsole()
}

// streamServed reports whether the node at base serves the WebSocket
// stream (a plain GET of it answers anything but 404).
func streamServed(t *testing.T, base string) bool {
	t.Helper()
	res, err := http.Get(base + "/api/v1/stream")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode != http.StatusNotFound
}
