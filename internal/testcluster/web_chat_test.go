package testcluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// TestWeb_Chat drives the room view's chat features beyond
// TestWeb_MessageChanges in headless Chromium, at a desktop's and a phone's
// size: a search result far back in history opens in context and
// highlighted while new messages still arrive; the pins panel lists pins and
// jumps to them; reactions come from the emoji picker, by mouse, keyboard
// and shortcode; and a mention of me shows as a badge in the rooms list, a
// count in the page's title and, once turned on, a desktop notification
// while the tab is hidden.
func TestWeb_Chat(t *testing.T) {
	onScreens(t,
		screenCheck{"SearchJump", polish.searchJump},
		screenCheck{"Pins", polish.pins},
		screenCheck{"Picker", polish.picker},
		screenCheck{"Mentions", polish.mentionNotices})
}

// chatRoom signs up an owner and a member of a new room named after the
// screen, and returns their clients and the room.
func (p polish) chatRoom(t *testing.T, name string) (owner, member *client.Client, room string) {
	t.Helper()
	room = p.name(name)
	owner = signUp(t, p.c, 0, 0, p.name(name+"-alice"))
	member = signUp(t, p.c, 0, 0, p.name(name+"-bob"))
	if _, err := owner.CreateRoom(apiCtx(t), client.RoomSpec{Name: room}); err != nil {
		t.Fatal(err)
	}
	if _, err := member.JoinRoom(apiCtx(t), room, ""); err != nil {
		t.Fatal(err)
	}
	return owner, member, room
}

// fitsScreen checks nothing on the page is wider than the screen.
func fitsScreen(b *browser) {
	b.t.Helper()
	b.check("nothing wider than the screen", `document.documentElement.scrollWidth <= innerWidth ? '' :
		'the page is ' + document.documentElement.scrollWidth + ' px wide on a ' + innerWidth + ' px screen'`)
}

// postAll posts texts to room as cl and returns their seqs.
func postAll(t *testing.T, cl *client.Client, room string, texts ...string) []uint64 {
	t.Helper()
	seqs := make([]uint64, len(texts))
	for i, text := range texts {
		r, err := cl.Post(apiCtx(t), room, text, client.PostOptions{})
		if err != nil {
			t.Fatalf("post %q: %v", text, err)
		}
		seqs[i] = r.Seq
	}
	return seqs
}

// fillers are n messages "filler N".
func fillers(n int) []string {
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("filler %d", i)
	}
	return texts
}

// shownInContext is an expression true when message seq is in the room's
// list, highlighted and on screen in the board, with its neighbours loaded.
func shownInContext(seq uint64) string {
	return fmt.Sprintf(`(() => { const el = document.querySelector('.board .events .msg.jumped[data-seq="%[1]d"]');
		if (!el || !document.querySelector('.board .events [data-seq="%[2]d"]') || !document.querySelector('.board .events [data-seq="%[3]d"]')) return false;
		const r = el.getBoundingClientRect(), b = document.querySelector('.board .scroller').getBoundingClientRect();
		return r.top >= b.top - 1 && r.bottom <= b.bottom + 1; })()`, seq, seq-1, seq+1)
}

// searchJump: a search result 200 messages back opens the room at that
// message, highlighted, with the messages around it; new messages are
// counted meanwhile, scrolling down loads newer ones, and the pill goes to
// the newest, after which messages arrive live again; the room's own search
// panel finds it again and jumps back to it; a message sent from there
// takes the view to the newest messages.
func (p polish) searchJump(t *testing.T) {
	alice, bob, room := p.chatRoom(t, "jump")
	word := "needle" + p.s.name
	target := postAll(t, bob, room, "the "+word+" we look for")[0]
	last := postAll(t, bob, room, fillers(200)...)[199]
	ctx := apiCtx(t)
	poll.Until(t, 10*time.Second, "the message indexed", func() error {
		res, err := alice.Search(ctx, client.SearchQuery{Q: word})
		if err != nil || len(res) == 0 {
			return fmt.Errorf("%d results, %v: %w", len(res), err, testcluster.ErrNotYet)
		}
		return nil
	})
	b := p.open(t, p.name("jump-alice"), alice, "#/rooms")
	b.do("search", chromedp.SendKeys(chromedp.CSS("form.search input[name=q]"), word+"\n"))
	b.waitFor("the result", hasText(".search-results li .search-text", "the "+word+" we look for"))
	b.do("open the result", clickJS(".search-results li a"))
	b.waitFor("the message in context", shownInContext(target))
	b.check("the room's address", fmt.Sprintf(`location.hash === '#/room/' + %s ? '' : 'at ' + location.hash`, js(room)))
	b.check("a window, not the whole room", fmt.Sprintf(`document.querySelector('.board .events [data-seq="%d"]') ? 'the newest message is loaded too' : ''`, last))
	b.check("the way back", `(() => { const pill = document.querySelector('.new-pill');
		return !pill.hidden && pill.textContent === 'Jump to the newest ↓' ? '' : 'the pill shows ' + JSON.stringify(pill.hidden ? '(hidden)' : pill.textContent); })()`)
	fitsScreen(b)
	b.screenshot("search-jump-" + p.s.name)

	postAll(t, bob, room, "posted after the jump")
	b.waitFor("the new message counted", `document.querySelector('.new-pill').textContent === '1 new message · Jump to the newest ↓'`)
	b.check("the window kept", `[...document.querySelectorAll('.board .events .text')].some((e) => e.textContent === 'posted after the jump') ? 'the new message was added after the gap' : ''`)
	count := `document.querySelectorAll('.board .events .msg').length`
	before, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](count))
	if err != nil {
		t.Fatal(err)
	}
	b.do("scroll to the window's end", chromedp.Evaluate[chromedp.Void](`(() => { const s = document.querySelector('.board .scroller'); s.scrollTop = s.scrollHeight; })()`))
	b.waitFor("newer messages loaded", fmt.Sprintf(`%s > %d`, count, before))
	b.do("go to the newest", clickJS(".new-pill"))
	b.waitFor("the newest messages", hasText(".board .events .msg .text", "posted after the jump")+` && document.querySelector('.new-pill').hidden`)
	postAll(t, bob, room, "and live again")
	b.waitFor("a live message", hasText(".board .events .msg .text", "and live again"))

	b.do("search the room", click(".search-button"), chromedp.WaitVisible(chromedp.CSS(".search-panel input[name=room-q]")),
		chromedp.SendKeys(chromedp.CSS(".search-panel input[name=room-q]"), word+"\n"))
	b.waitFor("the room's result, words marked", fmt.Sprintf(`(() => { const li = document.querySelectorAll('.room-search-results li');
		return li.length === 1 && li[0].querySelector('mark')?.textContent.toLowerCase() === %s; })()`, js(word)))
	fitsScreen(b)
	b.screenshot("room-search-" + p.s.name)
	b.do("open the room's result", clickJS(".room-search-results li .result-open"))
	b.waitFor("the message in context again", shownInContext(target))
	if p.s.phone {
		b.check("the search panel closed on a phone", `document.querySelector('.search-panel').hidden ? '' : 'the panel still covers the room'`)
	}
	b.do("send a message from back there", chromedp.SendKeys(chromedp.CSS("textarea[name=text]"), "sent from the past\n"))
	b.waitFor("the newest messages, mine last", `(() => { const t = [...document.querySelectorAll('.board .events .msg .text')].map((e) => e.textContent);
		return t[t.length - 1] === 'sent from the past' && t[t.length - 2] === 'and live again' && document.querySelector('.new-pill').hidden; })()`)
	b.checkConsole()
}

// pins: the header counts the pins; a pin from the hover menu joins the
// panel, which lists the newest pin first and jumps to a pin far back; an
// unpin from the panel takes it away everywhere.
func (p polish) pins(t *testing.T) {
	alice, bob, room := p.chatRoom(t, "pins")
	old := postAll(t, bob, room, "an old decision: we ship on **Fridays**")[0]
	postAll(t, bob, room, fillers(120)...)
	recent := postAll(t, bob, room, "a recent note")[0]
	if _, err := bob.Pin(apiCtx(t), room, old); err != nil {
		t.Fatal(err)
	}
	b := p.open(t, p.name("pins-alice"), alice, "#/room/"+room)
	b.waitFor("one pin counted", hasText(".pins-button .pins-count", "1")+" && "+hasText(".board .events .msg .text", "a recent note"))
	b.do("pin from the hover menu", clickJS(fmt.Sprintf(`.board .events .msg[data-seq="%d"] .menu-btn.pin`, recent)))
	b.waitFor("the pin shown", fmt.Sprintf(`document.querySelector('.board .events .msg[data-seq="%d"] .pin-tag') !== null`, recent)+
		` && `+hasText(".pins-button .pins-count", "2"))
	b.do("open the pins", click(".pins-button"))
	b.waitFor("both pins, newest first", `(() => { const items = [...document.querySelectorAll('.pins-panel .pin-item .text')].map((e) => e.textContent);
		return !document.querySelector('.pins-panel').hidden && items.length === 2 && items[0] === 'a recent note' &&
			items[1] === 'an old decision: we ship on Fridays' && document.querySelector('.pins-panel .pin-item strong')?.textContent === 'Fridays'; })()`)
	fitsScreen(b)
	b.screenshot("pins-" + p.s.name)
	b.do("jump to the old pin", clickJS(fmt.Sprintf(`.pins-panel .pin-item[data-seq="%d"] .pin-jump`, old)))
	b.waitFor("the old pin in context", shownInContext(old))
	if p.s.phone {
		b.check("the panel closed on a phone", `document.querySelector('.pins-panel').hidden ? '' : 'the panel still covers the room'`)
		b.do("open the pins again", click(".pins-button"))
	}
	b.do("unpin from the panel", clickJS(fmt.Sprintf(`.pins-panel .pin-item[data-seq="%d"] .unpin`, recent)))
	b.waitFor("one pin left", `document.querySelectorAll('.pins-panel .pin-item').length === 1 && `+hasText(".pins-button .pins-count", "1"))
	pins, err := bob.Pins(apiCtx(t), room)
	if err != nil || len(pins) != 1 || pins[0].Seq != old {
		t.Errorf("pins after the unpin: %+v, %v; want only seq %d", pins, err, old)
	}
	b.checkConsole()
}

// reactionShown is an expression true when the message's reactions show
// label for emoji.
func reactionShown(seq uint64, emoji, label string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('.board .events .msg[data-seq="%d"] .reaction')].some((r) => r.dataset.emoji === %s && r.textContent === %s)`,
		seq, js(emoji), js(label))
}

// picker: the picker opens from the hover menu with the focus in its
// filter; a name filters it and Enter reacts; the arrows and Enter pick
// from the grid; any :shortcode: is offered; Esc closes it and gives the
// focus back; the keyboard alone reaches a message, its menu and the
// picker; a known shortcode from elsewhere shows as its emoji. (And the
// list shows the day, Today, above its first event.)
func (p polish) picker(t *testing.T) {
	alice, bob, room := p.chatRoom(t, "react")
	seq := postAll(t, bob, room, "pick a reaction for this")[0]
	b := p.open(t, p.name("react-alice"), alice, "#/room/"+room)
	msg := fmt.Sprintf(`.board .events .msg[data-seq="%d"]`, seq)
	b.waitFor("the message", hasText(msg+" .text", "pick a reaction for this"))
	b.check("the day above the first event", `(() => { const days = [...document.querySelectorAll('.board .events > li[data-day]')];
		return days.length === 1 && days[0] === document.querySelector('.board .events > li[data-seq]') && days[0].dataset.day === 'Today' &&
			getComputedStyle(days[0], '::before').content === '"Today"' ? '' : 'days marked: ' + JSON.stringify(days.map((d) => d.dataset.seq + ' ' + d.dataset.day)); })()`)
	openPicker := func() {
		b.do("open the picker", clickJS(msg+" .menu-btn.add-reaction"))
		b.waitFor("the picker", `document.querySelector('.emoji-picker') !== null && document.activeElement.name === 'emoji-filter'`)
	}
	openPicker()
	b.check("the picker on screen", `(() => { const r = document.querySelector('.emoji-picker').getBoundingClientRect();
		return r.left >= 0 && r.right <= innerWidth && r.top >= 0 && r.bottom <= innerHeight ? '' : 'the picker is off screen: ' + JSON.stringify(r); })()`)
	fitsScreen(b)
	b.screenshot("emoji-picker-" + p.s.name)
	b.do("filter by name", chromedp.SendKeys(chromedp.CSS(".emoji-picker input"), "rock"))
	b.waitFor("only the rocket", `(() => { const e = [...document.querySelectorAll('.emoji-grid .emoji')]; return e.length === 1 && e[0].title === ':rocket:'; })()`)
	b.do("pick it with Enter", pressEnter(0))
	b.waitFor("the rocket", reactionShown(seq, "🚀", "🚀 1")+` && document.querySelector('.emoji-picker') === null`)

	openPicker()
	b.do("pick the second emoji with the arrows", chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowRight), pressEnter(0))
	b.waitFor("the heart", reactionShown(seq, "❤️", "❤️ 1"))

	openPicker()
	b.do("type a shortcode", chromedp.SendKeys(chromedp.CSS(".emoji-picker input"), ":shipit:"))
	b.waitFor("the shortcode offered", `document.querySelector('.emoji-grid .emoji.shortcode')?.textContent === ':shipit:'`)
	b.do("pick it", pressEnter(0))
	b.waitFor("the shortcode reaction", reactionShown(seq, ":shipit:", ":shipit: 1"))

	openPicker()
	b.do("Esc", chromedp.KeyEvent(kb.Escape))
	b.waitFor("the picker closed, the focus back", `document.querySelector('.emoji-picker') === null && document.activeElement.classList.contains('add-reaction')`)

	b.do("keyboard: into the messages", chromedp.Focus(chromedp.CSS(".board .scroller")), chromedp.KeyEvent(kb.ArrowUp))
	b.waitFor("the message focused, its menu shown", fmt.Sprintf(`document.activeElement.matches(%s) &&
		getComputedStyle(document.activeElement.querySelector('.msg-menu')).display === 'flex'`, js(msg)))
	for i := 0; ; i++ {
		on, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.activeElement.classList.contains('add-reaction')`))
		if err != nil {
			t.Fatal(err)
		}
		if on {
			break
		}
		if i == 20 {
			t.Fatal("Tab never reached the message's add-reaction button")
		}
		b.do("Tab", chromedp.KeyEvent(kb.Tab))
	}
	b.do("open the picker with Enter", pressEnter(0))
	b.waitFor("the picker, by keyboard", `document.querySelector('.emoji-picker') !== null && document.activeElement.name === 'emoji-filter'`)
	b.do("pick the eyes", chromedp.SendKeys(chromedp.CSS(".emoji-picker input"), "eyes"), pressEnter(0))
	b.waitFor("the eyes, the focus still on the message", reactionShown(seq, "👀", "👀 1")+
		fmt.Sprintf(` && document.activeElement.closest('.msg')?.dataset.seq === '%d'`, seq))

	if _, err := bob.React(apiCtx(t), room, seq, ":thumbsup:"); err != nil {
		t.Fatal(err)
	}
	b.waitFor("a known shortcode as its emoji", reactionShown(seq, ":thumbsup:", "👍 1"))
	m, err := bob.Message(apiCtx(t), room, seq)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"🚀", "❤️", ":shipit:", "👀"} {
		if !slices.ContainsFunc(m.Reactions, func(r client.Reaction) bool { return r.Emoji == e && slices.Contains(r.Users, p.name("react-alice")) }) {
			t.Errorf("the server has no %s by alice: %+v", e, m.Reactions)
		}
	}
	b.checkConsole()
}

// observeNotifications is run in the page before the app: it records the
// Notifications constructed and the permission requests, passing both on to
// the browser's own.
const observeNotifications = `(() => {
	const Real = window.Notification;
	window.__notes = [];
	window.__shown = [];
	window.__asked = 0;
	window.Notification = new Proxy(Real, {
		construct(target, args) {
			window.__notes.push({title: args[0], body: (args[1] || {}).body || ''});
			const n = Reflect.construct(target, args);
			window.__shown.push(n);
			return n;
		},
		get(target, key) {
			if (key === 'requestPermission') return (...a) => { window.__asked++; return target.requestPermission(...a); };
			return Reflect.get(target, key);
		},
	});
})()`

// hide makes the page see its tab as hidden (or shown again): Chromium
// gives a headless tab no way to be hidden, so document.hidden and
// visibilityState are redefined and visibilitychange is sent, as a switch
// of tabs does.
func hide(hidden bool) chromedp.Action[chromedp.Void] {
	state := map[bool]string{true: "hidden", false: "visible"}[hidden]
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		Object.defineProperty(document, 'hidden', {configurable: true, get: () => %t});
		Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => %q});
		document.dispatchEvent(new Event('visibilitychange')); })()`, hidden, state))
}

// setNotifications sets the browser's notification permission for base.
func setNotifications(t *testing.T, b *browser, base string, setting cdpbrowser.PermissionSetting) {
	t.Helper()
	if _, err := chromedp.CallBrowser(b.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: setting, Origin: base}); err != nil {
		t.Fatal(err)
	}
}

// mentionNotices: nothing is asked on page load; the bell asks once and
// turns notifications on; a mention while the tab is hidden makes a desktop
// notification with the text, a count in the title and a badge on the
// room; with the bell off none is shown; opening the room shows the
// unread divider before the first mention and clears the title, and
// reading it the badge; clicking the notification opens the mention in
// context.
func (p polish) mentionNotices(t *testing.T) {
	alice, bob, room := p.chatRoom(t, "ping")
	user := p.name("ping-alice")
	b := p.open(t, user, alice, "#/rooms")
	setNotifications(t, b, p.base, cdpbrowser.PermissionSettingPrompt)
	b.do("observe notifications", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: observeNotifications})
		return err
	}), chromedp.Reload())
	b.waitFor("the bell, off", `document.querySelector('.notify-toggle')?.dataset.state === 'off' && `+
		`document.querySelector('.notify-toggle').getAttribute('aria-pressed') === 'false' && document.querySelector('.room-row') !== null`)
	b.check("nothing asked on load", `window.__asked === 0 && Notification.permission === 'default' ? '' : 'asked ' + window.__asked + ' times, permission ' + Notification.permission`)

	setNotifications(t, b, p.base, cdpbrowser.PermissionSettingGranted) // the user's answer to the browser's question
	b.do("turn notifications on", click(".notify-toggle"))
	b.waitFor("the bell, on", `document.querySelector('.notify-toggle').dataset.state === 'on' && window.__asked === 1`)

	b.do("hide the tab", hide(true))
	first := postAll(t, bob, room, "@"+user+" can you look at the release notes?")[0]
	b.waitFor("the desktop notification", fmt.Sprintf(`window.__notes.length === 1 && window.__notes[0].title === %s &&
		window.__notes[0].body === %s`, js(p.name("ping-bob")+" mentioned you in #"+room), js("@"+user+" can you look at the release notes?")))
	b.waitFor("the title count", `document.title === '(1) Parley'`)
	b.waitFor("the mention badge", hasText(fmt.Sprintf(`.room-row[data-room=%s] .mention-badge`, js(room)), "@1"))
	b.do("show the tab", hide(false))
	fitsScreen(b)
	b.screenshot("notifications-" + p.s.name)

	b.do("turn notifications off", click(".notify-toggle"))
	b.waitFor("the bell, off again", `document.querySelector('.notify-toggle').dataset.state === 'off'`)
	b.do("hide the tab", hide(true))
	postAll(t, bob, room, "@"+user+" one more thing")
	b.waitFor("the second mention counted", `document.title === '(2) Parley'`)
	b.check("no notification with the bell off", `window.__notes.length === 1 ? '' : window.__notes.length + ' notifications'`)
	b.do("show the tab", hide(false))

	b.do("open the room", click(fmt.Sprintf(`.room-row[data-room=%s] .room-open`, js(room))))
	b.waitFor("the mention in the room", hasText(".board .events .msg.mentions-me .text", "@"+user+" one more thing"))
	b.check("the unread divider before the first unread message", fmt.Sprintf(`(() => { const d = document.querySelector('.board .unread-divider');
		if (!d) return 'no divider';
		const next = d.nextElementSibling?.querySelector('.text')?.textContent;
		return d.textContent === 'New messages' && next === %s ? '' : 'the divider reads ' + JSON.stringify(d.textContent) + ' before ' + JSON.stringify(next); })()`,
		js("@"+user+" can you look at the release notes?")))
	b.waitFor("the title count gone", `document.title === 'Parley'`)
	b.do("back to the rooms", click(".room-head .back"))
	b.waitFor("the mention badge gone once read", fmt.Sprintf(`document.querySelector('.room-row[data-room=%[1]s]') !== null &&
		document.querySelector('.room-row[data-room=%[1]s] .mention-badge') === null`, js(room)))
	b.do("click the desktop notification", chromedp.Evaluate[chromedp.Void](`window.__shown[0].onclick()`))
	b.waitFor("the mention in context", shownInContext(first))
	b.checkConsole()
}
