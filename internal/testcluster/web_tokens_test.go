package testcluster_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/poll"
)

// TestWeb_Tokens drives the Tokens page in headless Chromium: it is
// reached from the user menu, makes a read token narrowed to a room (the
// secret shown once, which then works against the API and is not shown
// again), lists it, and revokes it, after which the API refuses it.
func TestWeb_Tokens(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := newAPICluster(t, 1, 1)
	poll.Until(t, 10*time.Second, "the cluster speaks protocol 2", func() error {
		if p := c.Node(0).ClusterProtocol(); p < account.TokenProtocol {
			return fmt.Errorf("protocol %d", p)
		}
		return nil
	})
	base := "http://" + c.Node(0).HTTPAddr()
	ctx := apiCtx(t)
	ada := signUp(t, c, 0, 0, "ada")
	if _, err := ada.CreateRoom(ctx, client.RoomSpec{Name: "deploys"}); err != nil {
		t.Fatal(err)
	}

	S := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	session := fmt.Sprintf(`{"token":%s,"username":"ada","expires_at":%d}`, js(ada.Token()), time.Now().Add(time.Hour).UnixMilli())
	b.do("sign in", chromedp.Navigate(base+"/"), chromedp.WaitReady(S("#main")),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('parley.session', %s)`, js(session))),
		chromedp.Navigate(base+"/#/rooms"), chromedp.Reload(), chromedp.WaitVisible(S("#who a[data-nav=tokens]")))
	b.do("open Tokens from the user menu", chromedp.Click(S("#who a[data-nav=tokens]")), chromedp.WaitVisible(S("form input[name=name]")))
	b.waitFor("no tokens yet", hasText(".tokens-mine p", "You have no API tokens."))

	b.do("submit without a name", chromedp.Click(S("form button.primary")))
	b.waitFor("the name is asked for", `document.querySelector('input[name=name]').getAttribute('aria-invalid') === 'true'`)
	b.do("make a read token for one room",
		chromedp.SendKeys(S("input[name=name]"), "deploy watcher"),
		chromedp.SetValue(S("select[name=scope]"), "read"),
		chromedp.SendKeys(S("input[name=rooms]"), "deploys"),
		chromedp.Click(S("form button.primary")))
	b.waitFor("the secret, once, with a copy button", `(document.querySelector('.token-secret code.secret') || {}).textContent?.startsWith('pat_ada.') &&
		document.querySelector('.token-secret button.copy') !== null`)
	b.waitFor("the token listed", hasText(".tokens-mine td .tag", "read:room/deploys"))
	b.do("show the secret and the list", chromedp.Evaluate[chromedp.Void](`document.querySelector('.token-secret').scrollIntoView({block: 'center'})`))
	b.screenshot("tokens")
	secret, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('.token-secret code.secret').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	bot := anonAt(c, 0, client.WithToken(secret))
	if _, err := bot.History(ctx, "deploys", client.HistoryOptions{}); err != nil {
		t.Fatalf("the page's token cannot read its room: %v", err)
	}
	_, err = bot.Post(ctx, "deploys", "hi", client.PostOptions{})
	mustStatus(t, err, http.StatusForbidden, "forbidden")
	b.do("reload", chromedp.Reload(), chromedp.WaitVisible(S(".tokens-mine tr[data-id]")))
	shown, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.body.textContent.includes(%s)`, js(secret))))
	if err != nil || shown {
		t.Fatalf("the secret is shown again after a reload (err %v)", err)
	}

	b.do("revoke", chromedp.Click(S(".tokens-mine tr[data-id] button.revoke")))
	b.waitFor("the list empties", hasText(".tokens-mine p", "You have no API tokens."))
	poll.Until(t, time.Second, "the revoked token refused", func() error {
		_, err := bot.History(ctx, "deploys", client.HistoryOptions{})
		if err == nil {
			return fmt.Errorf("still accepted")
		}
		if !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "unauthorized") {
			t.Fatalf("revoked token: %v", err)
		}
		return nil
	})
	b.checkConsole()
}
