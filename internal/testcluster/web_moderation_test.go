package testcluster_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
)

// TestWeb_Moderation drives the room view's moderation in headless
// Chromium: the owner changes the topic and makes the room an announcement
// room from the settings panel, mutes and bans a member from the members
// panel (with a reason); the member's own tab shows the events, refuses
// their post with the server's reason, and turns the composer into the
// announcement notice.
func TestWeb_Moderation(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := newAPICluster(t, 1, 1)
	s := screens[0]
	p := polish{b: b, c: c, base: "http://" + c.Node(0).HTTPAddr(), s: s}
	ctx := apiCtx(t)
	olga := signUp(t, c, 0, 0, "olga")
	bob := signUp(t, c, 0, 0, "bob")
	if _, err := olga.CreateRoom(ctx, client.RoomSpec{Name: "town"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.JoinRoom(ctx, "town", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.Post(ctx, "town", "hello town", client.PostOptions{}); err != nil {
		t.Fatal(err)
	}

	owner := p.open(t, "olga", olga, "#/room/town")
	owner.waitFor("the owner's Settings button", `!document.querySelector('.settings-button').hidden`)
	owner.waitFor("bob's moderation buttons", `document.querySelector('[data-member=bob] .mod-mute') !== null`)
	owner.do("open the settings", clickJS(`.settings-button`))
	owner.waitFor("the settings panel", `!document.querySelector('.room-settings').hidden`)
	owner.do("set the topic", clear(`.room-settings input[name=topic]`),
		chromedp.SendKeys(chromedp.CSS(`.room-settings input[name=topic]`), "<i>Town</i> news"),
		clickJS(`.room-settings button[type=submit]`))
	owner.waitFor("the topic in the head, as text", hasText(".room-head .topic", "<i>Town</i> news")+
		` && document.querySelector('.room-head .topic i') === null`)
	owner.waitFor("the settings event", `[...document.querySelectorAll('.events .notice.moderation')].some((e) => e.textContent.startsWith('olga changed the topic'))`)

	// The owner makes an incoming webhook in the settings panel: its URL,
	// shown once, posts as a bot that shows as one; once revoked it is gone.
	owner.do("make a webhook", chromedp.SendKeys(chromedp.CSS(`.room-settings input[name=hook_name]`), "deploy bot"),
		clickJS(`.hook-create button[type=submit]`))
	owner.waitFor("the webhook URL, shown once", `(document.querySelector('.hook-url')?.textContent || '').includes('/api/v1/hooks/town.')`)
	hookURL, err := chromedp.Run(owner.ctx, chromedp.Evaluate[string](`document.querySelector('.hook-url').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	postHook := func() int {
		resp, err := http.Post(hookURL, "application/json", strings.NewReader(`{"text":"deployed <b>v2</b>"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := postHook(); code != http.StatusCreated {
		t.Fatalf("POST to the webhook URL = %d, want 201", code)
	}
	owner.waitFor("the bot's post with its badge, as text", `[...document.querySelectorAll('.events .sender.bot')].some((e) => e.textContent.startsWith('deploy bot') && e.querySelector('.bot-tag')) &&
		[...document.querySelectorAll('.events .msg .text')].some((e) => e.textContent.includes('deployed <b>v2</b>')) && document.querySelector('.events .msg .text b') === null`)
	owner.screenshot(fmt.Sprintf("room-webhook-%s", s.name))
	owner.do("revoke the webhook", clickJS(`.revoke-hook`))
	owner.waitFor("no webhooks listed", hasText(".hooks-list", "No webhooks."))
	if code := postHook(); code != http.StatusNotFound {
		t.Fatalf("POST to a revoked webhook = %d, want 404", code)
	}

	// The room's own retention and a legal hold (olga signed up first: she
	// is an admin) from the same panel.
	owner.do("keep 30 days", clear(`.room-settings input[name=retention_days]`),
		chromedp.SendKeys(chromedp.CSS(`.room-settings input[name=retention_days]`), "30"),
		clickJS(`.room-settings button[type=submit]`))
	owner.waitFor("the retention settings event", `[...document.querySelectorAll('.events .notice.moderation')].some((e) => e.textContent.startsWith('olga changed the retention days'))`)
	owner.do("place a legal hold", clickJS(`.legal-hold-toggle`))
	owner.waitFor("the hold shown in the panel and the room", `document.querySelector('.legal-hold-status').textContent.includes('under legal hold') &&
		document.querySelector('.room-rules').textContent.includes('legal hold') && !document.querySelector('.room-rules').hidden`)
	if r, err := olga.GetRoom(ctx, "town"); err != nil || r.RetentionDays != 30 || !r.LegalHold {
		t.Fatalf("room after the web panel = %+v, %v; want 30 days, held", r, err)
	}
	owner.do("lift the legal hold", clickJS(`.legal-hold-toggle`))
	owner.waitFor("the hold lifted", `document.querySelector('.legal-hold-status').textContent.startsWith('Not held') && document.querySelector('.room-rules').hidden`)

	// Outgoing webhooks: a private address is refused with the server's
	// reason; a public one is made, its secret shown once, listed and
	// deleted. Its trigger word is in no message, so nothing is sent.
	owner.do("an outgoing webhook to a private address",
		chromedp.SendKeys(chromedp.CSS(`.room-settings input[name=outhook_name]`), "ci"),
		chromedp.SendKeys(chromedp.CSS(`.room-settings input[name=outhook_url]`), "http://10.0.0.1/hook"),
		clickJS(`.outhook-create button[type=submit]`))
	owner.waitFor("the refusal names the private address", `[...document.querySelectorAll('.outhook-create .field-error')].some((e) => e.textContent.includes('private address'))`)
	owner.do("an outgoing webhook to a public address", clear(`.room-settings input[name=outhook_url]`),
		chromedp.SendKeys(chromedp.CSS(`.room-settings input[name=outhook_url]`), "https://93.184.215.14/hook"),
		chromedp.SendKeys(chromedp.CSS(`.room-settings input[name=outhook_triggers]`), "never-said"),
		clickJS(`.outhook-create button[type=submit]`))
	owner.waitFor("the signing secret, shown once", `(document.querySelector('.outhook-secret')?.textContent || '').length === 43`)
	owner.waitFor("the outgoing webhook listed", hasText(".outhooks-list li .row span", "never-said"))
	owner.do("delete the outgoing webhook", clickJS(`.delete-outhook`))
	owner.waitFor("no outgoing webhooks listed", hasText(".outhooks-list p", "No outgoing webhooks."))

	// bob's tab is in a browser context of its own: tabs of one context
	// share localStorage, where the app keeps its session.
	pb := p
	pb.b = p.b.isolated(t)
	member := pb.open(t, "bob", bob, "#/room/town")
	member.waitFor("bob sees the topic", hasText(".room-head .topic", "<i>Town</i> news"))
	member.waitFor("no Settings button for a member", `document.querySelector('.settings-button').hidden`)
	member.waitFor("no moderation buttons for a member", `document.querySelector('.mod-actions') === null`)

	owner.do("mute bob with a reason", chromedp.Evaluate[chromedp.Void](`window.prompt = () => 'flooding'`),
		clickJS(`[data-member=bob] .mod-mute`))
	member.waitFor("bob sees his mute", `[...document.querySelectorAll('.events .notice.moderation')].some((e) => /^olga muted bob until .*: flooding/.test(e.textContent))`)
	// pressEnter, not SendKeys' "\n": that sends the new line apart from
	// the key-down, and when it arrives after the refusal (a loaded
	// machine) it is typed into the composer, which clears the refusal.
	member.do("bob tries to post", chromedp.SendKeys(chromedp.CSS("textarea[name=text]"), "let me talk"), pressEnter(0))
	member.waitFor("the refusal names the mute", `(document.querySelector('.composer .form-error')?.textContent || '').includes('muted')`)

	owner.do("make it an announcement room", clickJS(`.settings-button`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('.room-settings input[name=announcement]').click()`),
		clickJS(`.room-settings button[type=submit]`))
	member.waitFor("bob's composer gives way to the notice", `document.querySelector('.composer').hidden &&
		document.querySelector('.room-rules').textContent.includes('announcement room')`)

	owner.do("ban bob", chromedp.Evaluate[chromedp.Void](`window.prompt = () => ''`), clickJS(`[data-member=bob] .mod-ban`))
	owner.waitFor("bob gone from the members", `document.querySelector('[data-member=bob]') === null`)
	owner.waitFor("the ban event", `[...document.querySelectorAll('.events .notice.moderation')].some((e) => e.textContent.startsWith('olga banned bob for good'))`)
	_, err = bob.History(ctx, "town", client.HistoryOptions{})
	mustStatus(t, err, http.StatusForbidden, "forbidden")
	owner.screenshot(fmt.Sprintf("room-moderation-%s", s.name))
	owner.checkConsole()
	member.checkConsole()
}

// isolated opens a tab in a new browser context of b's Chromium (its own
// cookies and storage), so that it can be signed in as another user.
func (b *browser) isolated(t *testing.T) *browser {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	return watch(ctx, t, "open a tab in a new browser context")
}
