package testcluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/testcluster"
)

// TestWeb_SessionEnded drives the web app in headless Chromium: logging out
// on the page shows no session-ended message; when the page's session is
// logged out from elsewhere, the stream's unauthorized frame takes the page
// to the sign-in form with a message, and the stream stops reconnecting.
// The page shows a room, which calls the API by itself only every 15 s
// while its stream is live: too late to be what notices.
func TestWeb_SessionEnded(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := testcluster.New(t, testcluster.Options{
		Nodes: 1, ReplicationFactor: 1, NoSync: true,
		Configure: func(_ int, cfg *config.Config) { cfg.RateLimit = 1 << 20 },
	})
	base := "http://" + c.Node(0).HTTPAddr()
	alice := signUp(t, c, 0, 0, "alice")
	if _, err := alice.CreateRoom(apiCtx(t), client.RoomSpec{Name: "lobby"}); err != nil {
		t.Fatal(err)
	}
	open := func(what string, cl *client.Client) {
		t.Helper()
		session := fmt.Sprintf(`{"token":%s,"username":"alice","expires_at":%d}`, js(cl.Token()), time.Now().Add(time.Hour).UnixMilli())
		b.do(what,
			chromedp.Navigate(base+"/#/login"),
			chromedp.WaitVisible(chromedp.CSS("form.auth")),
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('parley.session', %s)`, js(session))),
			chromedp.Navigate(base+"/#/room/lobby"),
			chromedp.Reload())
		b.waitFor(what+": the room, live", `document.body.dataset.stream === 'live' && document.querySelector('.room textarea[name=text]') !== null`)
	}
	const ended = `document.getElementById('banner').textContent === 'Your session has ended; please log in again.'`

	// Logging out on the page is not a session that ended.
	open("sign the page in", signIn(t, c, 0, "alice"))
	b.do("log out", chromedp.Click(chromedp.CSS("#logout")), chromedp.WaitVisible(chromedp.CSS("form.auth input[name=username]")))
	time.Sleep(time.Second) // nothing to wait for: the frame would come within milliseconds
	shown, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](ended))
	if err != nil {
		t.Fatal(err)
	}
	if shown {
		t.Fatal("logging out on the page showed the session-ended message")
	}

	open("sign the page in again", alice)
	// Count the WebSockets the page opens from now on.
	b.do("watch reconnects", chromedp.Evaluate[chromedp.Void](`window.opened = 0;
		window.WebSocket = class extends WebSocket { constructor(...a) { super(...a); window.opened++; } };`))
	if err := alice.Logout(apiCtx(t)); err != nil {
		t.Fatal(err)
	}
	b.do("the sign-in form, within 3 s", chromedp.Poll[chromedp.Void](
		`document.querySelector('form.auth input[name=username]') !== null && `+ended,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(3*time.Second)))
	// Nothing to wait for: a reconnect would come within the stream's
	// first backoff (at most 0.5 s).
	time.Sleep(1500 * time.Millisecond)
	opened, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`window.opened`))
	if err != nil {
		t.Fatal(err)
	}
	if opened != 0 {
		t.Fatalf("the page opened %d streams after its session ended", opened)
	}
	b.checkConsole()
}
