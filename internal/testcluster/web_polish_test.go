package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// screen is a window size the web app is checked at.
type screen struct {
	name  string
	w, h  int64
	phone bool
}

// screens are a desktop's window and a phone's (an iPhone 12 to 16's CSS
// pixels).
var screens = []screen{{"desktop", 1100, 700, false}, {"phone", 390, 844, true}}

// emulate sizes the tab as s.
func (s screen) emulate() chromedp.Action[chromedp.Void] {
	if s.phone {
		return chromedp.EmulateViewport(s.w, s.h, chromedp.EmulateMobile, chromedp.EmulatePortrait)
	}
	return chromedp.EmulateViewport(s.w, s.h)
}

// polish holds what the checks of TestWeb_Polish share: one Chromium, one
// node and the screen being checked.
type polish struct {
	b    *browser
	c    *testcluster.Cluster
	base string
	s    screen
}

// TestWeb_Polish drives the web app in headless Chromium at a desktop's and
// a phone's size, each check in a tab of its own: errors under fields go
// away when the field is edited or the form succeeds; a private room's lock
// is an inline SVG with a label; the newest message is wholly on screen
// above the composer; a long paste grows the composer up to a limit and
// never widens the page; a blank message is refused with a visible note;
// and the KV page browses keys by prefix a page at a time, shows values
// safely (binary ones as a size and hex), saves with compare-and-swap
// showing a conflict clearly, and deletes after a confirmation.
func TestWeb_Polish(t *testing.T) {
	onScreens(t,
		screenCheck{"StaleErrors", polish.staleErrors},
		screenCheck{"PrivateLock", polish.privateLock},
		screenCheck{"NewestVisible", polish.newestVisible},
		screenCheck{"LongPaste", polish.longPaste},
		screenCheck{"BlankMessage", polish.blankMessage},
		screenCheck{"KV", polish.kv})
}

// screenCheck is a named check of the web app at one screen's size.
type screenCheck struct {
	name string
	run  func(polish, *testing.T)
}

// onScreens runs each check in a subtest of its own at every screen's size,
// with one Chromium and one node for all (a cluster test: skipped under
// -short).
func onScreens(t *testing.T, checks ...screenCheck) {
	t.Helper()
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := newAPICluster(t, 1, 1)
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			p := polish{b: b, c: c, base: "http://" + c.Node(0).HTTPAddr(), s: s}
			for _, check := range checks {
				t.Run(check.name, func(t *testing.T) { check.run(p, t) })
			}
		})
	}
}

// name returns a user, room or key name unique to the screen.
func (p polish) name(s string) string { return s + "-" + p.s.name }

// open opens hash in a new tab for t at p's screen, signed in as user (the
// session put where the app keeps it).
func (p polish) open(t *testing.T, user string, cl *client.Client, hash string) *browser {
	t.Helper()
	b := p.b.tab(t)
	session := fmt.Sprintf(`{"token":%s,"username":%s,"expires_at":%d}`, js(cl.Token()), js(user), time.Now().Add(time.Hour).UnixMilli())
	b.do("open "+hash, p.s.emulate(),
		chromedp.Navigate(p.base+"/"),
		chromedp.WaitReady(chromedp.CSS("#main")),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('parley.session', %s)`, js(session))),
		chromedp.Navigate(p.base+"/"+hash),
		chromedp.Reload())
	return b
}

// check evaluates expr, which gives the empty string when all is well and
// what is wrong otherwise, and fails the test (going on) with what is wrong.
func (b *browser) check(what, expr string) {
	b.t.Helper()
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	if got != "" {
		b.t.Errorf("%s: %s", what, got)
	}
}

// noErrors is an expression that lists the errors still shown in the form
// matching sel (the empty string when there are none).
func noErrors(sel string) string {
	return fmt.Sprintf(`(() => { const f = document.querySelector(%s);
		if (!f) return 'no form';
		const shown = [...f.querySelectorAll('.field-error, .form-error')]
			.filter((e) => !e.hidden && e.textContent.trim() !== '').map((e) => e.textContent.trim());
		const invalid = [...f.querySelectorAll('[aria-invalid=true]')].map((e) => e.name);
		return shown.length || invalid.length ? 'still shown: ' + JSON.stringify(shown) + ', marked invalid: ' + JSON.stringify(invalid) : ''; })()`, js(sel))
}

// staleErrors: an error under a field goes when the field is edited, and
// when the form then succeeds without that field being edited.
func (p polish) staleErrors(t *testing.T) {
	S := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	user := p.name("ann")
	ann := signUp(t, p.c, 0, 0, user)
	bob := signUp(t, p.c, 0, 0, p.name("bob"))
	if _, err := ann.CreateRoom(apiCtx(t), client.RoomSpec{Name: p.name("taken")}); err != nil {
		t.Fatal(err)
	}
	b := p.b.tab(t)
	b.do("open the login form", p.s.emulate(), chromedp.Navigate(p.base+"/"), chromedp.WaitReady(S("#main")),
		chromedp.Evaluate[chromedp.Void](`localStorage.clear()`), // tabs share it: signed out
		chromedp.Navigate(p.base+"/#/login"), chromedp.Reload(), chromedp.WaitVisible(S("form.auth")))
	b.do("log in with a wrong password",
		chromedp.SendKeys(S("input[name=username]"), user),
		chromedp.SendKeys(S("input[name=password]"), "not the password"),
		chromedp.Click(S("form.auth button[type=submit]")))
	b.waitFor("the login refused", hasText("form.auth .form-error", "Wrong username or password."))
	b.do("edit the password", chromedp.SendKeys(S("input[name=password]"), "!"))
	b.check("the login form after an edit", noErrors("form.auth"))

	b.do("log in",
		clear("input[name=password]"), chromedp.SendKeys(S("input[name=password]"), password(user)),
		chromedp.Click(S("form.auth button[type=submit]")),
		chromedp.WaitVisible(S("form.create-room")))
	b.do("create a room whose name is taken",
		chromedp.SendKeys(S("input[name=room]"), p.name("taken")),
		chromedp.Click(S("form.create-room button[type=submit]")))
	b.waitFor("the name refused", hasText(".create-room .field-error", "A room with that name exists."))
	b.do("edit the name", chromedp.SendKeys(S("input[name=room]"), "2"))
	b.check("the new-room form after an edit", noErrors("form.create-room"))

	code := p.name("code")
	if _, err := bob.CreateLink(apiCtx(t), "https://example.com/bob", client.LinkOptions{Code: code}); err != nil {
		t.Fatal(err)
	}
	b.do("shorten with a taken code", chromedp.Navigate(p.base+"/#/links"), chromedp.WaitVisible(S("input[name=url]")),
		chromedp.SendKeys(S("input[name=url]"), "https://example.com/ann"),
		chromedp.SendKeys(S("input[name=code]"), code),
		chromedp.Click(S("form.stack button[type=submit]")))
	b.waitFor("the code refused", hasText("form.stack .field-error", "That code is taken."))
	if err := bob.DeleteLink(apiCtx(t), code); err != nil {
		t.Fatal(err)
	}
	b.do("shorten again, the code now free", chromedp.Click(S("form.stack button[type=submit]")))
	b.waitFor("the short link", `document.querySelector('.short-result a.short') !== null`)
	b.check("the links form after it succeeded", noErrors("form.stack"))
	b.checkConsole()
}

// privateLock: a private room's lock is an inline SVG with an accessible
// label, drawn without any emoji font.
func (p polish) privateLock(t *testing.T) {
	user := p.name("lock")
	cl := signUp(t, p.c, 0, 0, user)
	vault, hall := p.name("vault"), p.name("hall")
	if _, err := cl.CreateRoom(apiCtx(t), client.RoomSpec{Name: vault, Private: true, Password: "a vault password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateRoom(apiCtx(t), client.RoomSpec{Name: hall}); err != nil {
		t.Fatal(err)
	}
	b := p.open(t, user, cl, "#/rooms")
	b.waitFor("both rooms listed", fmt.Sprintf(`document.querySelector('.room-row[data-room=%s]') !== null &&
		document.querySelector('.room-row[data-room=%s]') !== null`, js(vault), js(hall)))
	b.check("the lock", fmt.Sprintf(`(() => {
		const row = document.querySelector('.room-row[data-room=%s]');
		const lock = row.querySelector('.lock');
		if (!lock) return 'no .lock in the row';
		if (!(lock instanceof SVGSVGElement)) return 'the lock is a ' + lock.tagName + ' ' + JSON.stringify(lock.textContent) + ', not an inline SVG';
		if (lock.getAttribute('role') !== 'img' || !lock.getAttribute('aria-label')) return 'the lock has no role img and label';
		const r = lock.getBoundingClientRect();
		if (r.width < 8 || r.height < 8) return 'the lock is not drawn: ' + r.width + 'x' + r.height;
		if (/\p{Extended_Pictographic}/u.test(row.textContent)) return 'the row still holds an emoji: ' + JSON.stringify(row.textContent);
		return ''; })()`, js(vault)))
	b.check("no lock on a public room", fmt.Sprintf(`document.querySelector('.room-row[data-room=%s] .lock') === null ? '' : 'a public room has a lock'`, js(hall)))
	b.checkConsole()
}

// newestShown is an expression that says what is wrong unless the room's
// newest message is wholly on screen between the top of the board and the
// composer (its end, when it is taller than the board), the composer on
// screen and nothing wider than the screen.
const newestShown = `(() => {
	const items = document.querySelectorAll('.events > li');
	if (!items.length) return 'no messages';
	const last = items[items.length - 1].getBoundingClientRect();
	const board = document.querySelector('.scroller').getBoundingClientRect();
	const comp = document.querySelector('.composer').getBoundingClientRect();
	const px = (r) => Math.round(r.top) + '..' + Math.round(r.bottom);
	const where = ' (newest ' + px(last) + ', board ' + px(board) + ', composer ' + px(comp) + ', screen 0..' + innerHeight + ')';
	if (last.bottom > comp.top + 1 || last.bottom > board.bottom + 1) return 'the newest message ends under the composer' + where;
	if (last.top < board.top - 1 && last.height <= board.height) return 'the newest message starts above the board' + where;
	if (comp.bottom > innerHeight + 1) return 'the composer ends below the screen' + where;
	if (document.documentElement.scrollWidth > innerWidth) return 'the page is ' + document.documentElement.scrollWidth + ' px wide on a ' + innerWidth + ' px screen';
	return ''; })()`

// busyRoom signs up the owner of a new room in which a second user has
// posted many messages, the last over three lines, and returns the owner's
// client, the other user's and the room's name.
func (p polish) busyRoom(t *testing.T, owner string) (*client.Client, *client.Client, string) {
	t.Helper()
	room := p.name(owner)
	cl := signUp(t, p.c, 0, 0, p.name(owner))
	other := signUp(t, p.c, 0, 0, p.name(owner+"-pal"))
	if _, err := cl.CreateRoom(apiCtx(t), client.RoomSpec{Name: room}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.JoinRoom(apiCtx(t), room, ""); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		text := fmt.Sprintf("message %d", i)
		if i == 29 {
			text = "the last one\nover three\nlines"
		}
		if _, err := other.Post(apiCtx(t), room, text, client.PostOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cl, other, room
}

// openRoom opens room for user and waits until its page settles: the
// newest message shown, both members listed, the stream live.
func (p polish) openRoom(t *testing.T, user string, cl *client.Client, room, newest string) *browser {
	t.Helper()
	b := p.open(t, user, cl, "#/room/"+room)
	b.waitFor("the room settled", hasText(".events .msg .text", newest)+` &&
		document.querySelectorAll('.members .member').length === 2 && document.querySelector('.mode').dataset.mode === 'live'`)
	time.Sleep(300 * time.Millisecond) // nothing to wait for: a late layout change
	return b
}

// newestVisible: the newest message is wholly visible above the composer
// when the room opens, when a message arrives and when one is sent.
func (p polish) newestVisible(t *testing.T) {
	cl, other, room := p.busyRoom(t, "lay")
	b := p.openRoom(t, p.name("lay"), cl, room, "the last one\nover three\nlines")
	b.check("the room opened", newestShown)
	if _, err := other.Post(apiCtx(t), room, "a live one\nalso on\nthree lines", client.PostOptions{}); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the live message", hasText(".events .msg .text", "a live one\nalso on\nthree lines"))
	time.Sleep(300 * time.Millisecond)
	b.check("a message arrived", newestShown)
	b.do("send a message", chromedp.SendKeys(chromedp.CSS("textarea[name=text]"), "my own"), chromedp.Click(chromedp.CSS(".composer button[type=submit]")))
	b.waitFor("my message", hasText(".events .msg .text", "my own"))
	time.Sleep(300 * time.Millisecond)
	b.check("a message sent", newestShown)
	b.checkConsole()
}

// longPaste: a long paste grows the composer up to a limit, wraps, and
// neither widens the page nor hides the newest message; sending it shrinks
// the composer back.
func (p polish) longPaste(t *testing.T) {
	cl, _, room := p.busyRoom(t, "paste")
	b := p.openRoom(t, p.name("paste"), cl, room, "the last one\nover three\nlines")
	h0, err := chromedp.Run(b.ctx, chromedp.Evaluate[float64](`document.querySelector('textarea[name=text]').getBoundingClientRect().height`))
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a rather long paste ", 60) + "https://example.com/" + strings.Repeat("x", 300)
	b.do("paste", chromedp.Focus(chromedp.CSS("textarea[name=text]")), chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: long})
		return err
	}))
	time.Sleep(200 * time.Millisecond)
	b.check("the composer after the paste", fmt.Sprintf(`(() => {
		const ta = document.querySelector('textarea[name=text]');
		const r = ta.getBoundingClientRect(), comp = document.querySelector('.composer').getBoundingClientRect();
		if (ta.value.length < 1000) return 'the paste did not land: ' + ta.value.length + ' characters';
		if (r.height < %[1]f + 40) return 'the composer did not grow: ' + r.height + ' px, was %[1]f';
		if (r.height > innerHeight * 0.4) return 'the composer grew past its limit: ' + r.height + ' px of ' + innerHeight;
		if (ta.scrollWidth > ta.clientWidth + 1) return 'the text does not wrap: ' + ta.scrollWidth + ' px wide in ' + ta.clientWidth;
		if (comp.right > innerWidth + 1) return 'the composer ends past the screen: ' + comp.right;
		return ''; })()`, h0))
	b.check("the room after the paste", newestShown)
	b.do("send it", chromedp.Click(chromedp.CSS(".composer button[type=submit]")))
	b.waitFor("the long message", hasText(".events .msg .text", strings.TrimSpace(long)))
	time.Sleep(300 * time.Millisecond)
	b.check("the room after sending it", newestShown)
	b.check("the composer after sending", fmt.Sprintf(`(() => { const h = document.querySelector('textarea[name=text]').getBoundingClientRect().height;
		return Math.abs(h - %[1]f) > 2 ? 'the composer is ' + h + ' px high, was %[1]f' : ''; })()`, h0))
	b.checkConsole()
}

// click scrolls the element matching sel to the middle of the screen, out
// from under the sticky top bar, and clicks it (chromedp.Click scrolls
// only an element wholly off screen, and may hit the bar).
func click(sel string) chromedp.Action[chromedp.Void] {
	once := chromedp.Steps(
		chromedp.WaitVisible(chromedp.CSS(sel)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%s).scrollIntoView({block: 'center'})`, js(sel))),
		chromedp.Click(chromedp.CSS(sel)))
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		// The page may render what sel finds anew between the query and
		// the click (a stream frame updating the room list): Chrome then
		// no longer knows the node it was asked about, and the click is
		// made on the new one, as a user's click lands on what is there.
		var err error
		for range 3 {
			if _, err = once(ctx, t); err == nil || !strings.Contains(err.Error(), "Could not find node with given id") {
				return err
			}
		}
		return err
	})
}

// pressEnter presses Enter with the modifiers given as a keyboard does: a
// key-down that carries the text, so a page that cancels the key-down gets
// no new line (chromedp.KeyEvent sends the text apart, which no cancelling
// stops).
func pressEnter(modifiers chromedp.Modifier) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: "Enter", Code: "Enter", Text: "\r",
			UnmodifiedText: "\r", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13, Modifiers: int64(modifiers)}
		if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, down); err != nil {
			return err
		}
		up := down
		up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, up)
		return err
	})
}

// composerError is an expression that says what is wrong unless the
// composer shows a note on screen.
const composerError = `(() => {
	const e = document.querySelector('.composer .form-error');
	if (!e || e.hidden || !e.textContent.trim()) return 'no note shown';
	const r = e.getBoundingClientRect();
	if (r.height === 0 || r.top < 0 || r.bottom > innerHeight) return 'the note is off screen: ' + r.top + '..' + r.bottom;
	return ''; })()`

// blankMessage: a message of only spaces and new lines, or a whisper with
// no text, is refused in the page with a visible note and never sent; an
// edit takes the note away.
func (p polish) blankMessage(t *testing.T) {
	cl, other, room := p.busyRoom(t, "blank")
	b := p.openRoom(t, p.name("blank"), cl, room, "the last one\nover three\nlines")
	ta := chromedp.CSS("textarea[name=text]")
	b.do("send spaces", chromedp.SendKeys(ta, "   "), chromedp.Click(chromedp.CSS(".composer button[type=submit]")))
	b.check("spaces refused", composerError)
	b.do("edit", chromedp.SendKeys(ta, " "))
	b.check("the note after an edit", noErrors(".composer"))
	b.do("send spaces and new lines with Enter", clear("textarea[name=text]"),
		chromedp.SendKeys(ta, "  "), pressEnter(chromedp.ModifierShift), chromedp.SendKeys(ta, "  "), pressEnter(0))
	b.check("spaces and new lines refused", composerError)
	b.do("a whisper without text", clear("textarea[name=text]"),
		chromedp.SendKeys(ta, "/w "+p.name("blank-pal")+"    "), chromedp.Click(chromedp.CSS(".composer button[type=submit]")))
	b.check("the empty whisper refused", composerError)
	time.Sleep(500 * time.Millisecond) // nothing to wait for: a post would take milliseconds
	evs, err := other.History(apiCtx(t), room, client.HistoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.EqualFold(ev.Sender, p.name("blank")) && (ev.Kind == "message" || ev.Kind == "whisper") {
			t.Errorf("the page posted %s %q", ev.Kind, ev.Text)
		}
	}
	b.checkConsole()
}

// kv: the KV page is in the top bar; it lists keys by prefix a page at a
// time, shows text safely and binary as a size and hex, saves with
// compare-and-swap and shows a conflict clearly, creates only new keys, and
// deletes after a confirmation.
func (p polish) kv(t *testing.T) {
	user := p.name("kv")
	k := kvPage{t: t, cl: signUp(t, p.c, 0, 0, user), other: signUp(t, p.c, 0, 0, p.name("kv-pal")), prefix: p.name("app") + "/"}
	for i := range 25 {
		k.put(k.cl, fmt.Sprintf("%sk%02d", k.prefix, i), fmt.Appendf(nil, "value %02d", i))
	}
	k.put(k.cl, k.prefix+"html", []byte(kvMarkup))
	k.put(k.cl, k.prefix+"bin", []byte{0, 1, 2, 0xff, 0xfe})
	k.put(k.cl, k.prefix+"config.json", []byte("{\n  \"theme\": \"dark\",\n  \"retention_days\": 30,\n  \"features\": [\"whispers\", \"queues\", \"links\"]\n}\n"))
	k.put(k.cl, p.name("elsewhere"), []byte("not under the prefix"))

	k.b = p.open(t, user, k.cl, "#/rooms")
	k.browse()
	k.values()
	k.conflict(k.prefix + "k03")
	k.delete(k.prefix + "k03")
	k.create()
	k.history(k.prefix + "k05")
	k.watchLive()
	k.open(k.prefix + "config.json")
	k.b.waitFor("the config", `document.querySelector('.kv-value') !== null && document.querySelector('.kv-value').textContent.includes('retention_days')`)
	k.b.check("nothing wider than the screen", `document.documentElement.scrollWidth <= innerWidth ? '' : 'the page is ' + document.documentElement.scrollWidth + ' px wide'`)
	k.b.waitFor("the banner gone", `document.getElementById('banner').hidden`)
	if !p.s.phone {
		k.b.screenshot("kv")
	}
	k.b.checkConsole()
}

// kvMarkup is a value that would run script if it were parsed as markup.
const kvMarkup = `<img src="x" onerror="window.pwned = 1"><b>not bold</b>`

// kvRows counts the rows of the KV page's list of keys.
const kvRows = `document.querySelectorAll('.kv-keys tbody tr').length`

// kvPage drives the KV page: its tab, its user, another user and the
// prefix of the keys seeded (25 of kNN, html, bin and config.json).
type kvPage struct {
	t         *testing.T
	b         *browser
	cl, other *client.Client
	prefix    string
}

// put stores value under key as c, unconditionally, and returns the version.
func (k kvPage) put(c *client.Client, key string, value []byte) uint64 {
	k.t.Helper()
	v, err := c.KVPut(apiCtx(k.t), key, value, client.PutOptions{})
	if err != nil {
		k.t.Fatalf("put %s: %v", key, err)
	}
	return v
}

// get reads key through the API.
func (k kvPage) get(key string) (string, uint64, error) {
	v, ver, err := k.cl.KVGet(apiCtx(k.t), key, client.GetOptions{})
	return string(v), ver, err
}

// open opens key from the list.
func (k kvPage) open(key string) {
	k.t.Helper()
	k.b.do("open "+key, click(fmt.Sprintf(`.kv-keys tr[data-key=%s] button`, js(key))))
	k.b.waitFor(key+" shown", hasText(".kv-detail h2", key))
}

// keyAt is an expression true when the list has n rows, the i-th (from 0)
// being key.
func keyAt(n, i int, key string) string {
	return fmt.Sprintf(`%s === %d && document.querySelectorAll('.kv-keys tbody tr')[%d].dataset.key === %s`, kvRows, n, i, js(key))
}

// browse opens the page from the top bar and pages through the prefix.
func (k kvPage) browse() {
	k.b.do("open the KV page from the top bar", chromedp.WaitVisible(chromedp.CSS("form.create-room")),
		click(`#nav a[data-nav=kv]`), chromedp.WaitVisible(chromedp.CSS("form.kv-browse")))
	k.b.check("the KV page's address", `location.hash === '#/kv' ? '' : 'at ' + location.hash`)
	k.b.do("list the prefix", chromedp.SendKeys(chromedp.CSS("input[name=prefix]"), k.prefix), click("form.kv-browse button[type=submit]"))
	k.b.waitFor("the first page", keyAt(20, 0, k.prefix+"bin"))
	k.b.do("the next page", click(".kv-pager .kv-next"))
	k.b.waitFor("the second page", keyAt(8, 7, k.prefix+"k24"))
	k.b.check("no next page after the last", `document.querySelector('.kv-pager .kv-next').disabled ? '' : 'Next is enabled on the last page'`)
	k.b.do("the previous page", click(".kv-pager .kv-prev"))
	k.b.waitFor("the first page again", keyAt(20, 0, k.prefix+"bin"))
}

// values checks markup is shown as text and binary as size and hex.
func (k kvPage) values() {
	k.open(k.prefix + "html")
	k.b.waitFor("the markup shown as text", fmt.Sprintf(`document.querySelector('.kv-value') !== null && document.querySelector('.kv-value').textContent === %s`, js(kvMarkup)))
	k.b.check("the markup inert", `document.querySelector('.kv-detail img, .kv-detail b') === null && window.pwned === undefined ? '' : 'the value was parsed as markup'`)
	k.open(k.prefix + "bin")
	k.b.waitFor("the binary value as size and hex", `document.querySelector('.kv-binary') !== null &&
		document.querySelector('.kv-binary').textContent.includes('5 bytes') &&
		document.querySelector('.kv-hex').textContent.includes('00 01 02 ff fe')`)
}

// conflict: someone else changes key while it is being edited; the save
// is refused, nothing is lost, and overwriting is a choice.
func (k kvPage) conflict(key string) {
	k.open(key)
	k.b.waitFor("the value", hasText(".kv-value", "value 03"))
	k.b.do("edit", click(".kv-detail .kv-edit"), chromedp.WaitVisible(chromedp.CSS("textarea.kv-editor")))
	theirs := k.put(k.other, key, []byte("theirs"))
	k.b.do("save", clear("textarea.kv-editor"), chromedp.SendKeys(chromedp.CSS("textarea.kv-editor"), "mine"), click(".kv-detail .kv-save"))
	k.b.waitFor("the conflict", fmt.Sprintf(`document.querySelector('.kv-conflict') !== null &&
		document.querySelector('.kv-conflict').textContent.includes('version %d') &&
		document.querySelector('.kv-conflict .kv-theirs').textContent === 'theirs' &&
		document.querySelector('textarea.kv-editor').value === 'mine'`, theirs))
	if v, _, err := k.get(key); err != nil || v != "theirs" {
		k.t.Errorf("after the conflict the key holds %q (%v), want theirs", v, err)
	}
	k.b.do("overwrite theirs", click(".kv-conflict .kv-overwrite"))
	k.b.waitFor("mine saved", fmt.Sprintf(`document.querySelector('.kv-value') !== null && document.querySelector('.kv-value').textContent === 'mine' &&
		document.querySelector('.kv-meta').textContent.includes('version %d')`, theirs+1))
	if v, ver, err := k.get(key); err != nil || v != "mine" || ver != theirs+1 {
		k.t.Errorf("after overwriting the key holds %q version %d (%v), want mine version %d", v, ver, err, theirs+1)
	}
}

// delete: deleting key asks first, and cancelling keeps it.
func (k kvPage) delete(key string) {
	k.b.do("delete, then cancel", click(".kv-detail .kv-delete"), chromedp.WaitVisible(chromedp.CSS(".kv-confirm")),
		click(".kv-confirm .kv-cancel"))
	k.b.check("the confirmation gone", `document.querySelector('.kv-confirm') === null ? '' : 'still asking'`)
	if _, _, err := k.get(key); err != nil {
		k.t.Errorf("the key is gone after cancelling: %v", err)
	}
	k.b.do("delete, confirmed", click(".kv-detail .kv-delete"), chromedp.WaitVisible(chromedp.CSS(".kv-confirm")),
		click(".kv-confirm .kv-confirm-delete"))
	k.b.waitFor("the key out of the list", fmt.Sprintf(`document.querySelector('.kv-keys tr[data-key=%s]') === null && %s === 20`, js(key), kvRows))
	var apiErr *client.Error
	if _, _, err := k.get(key); !errors.As(err, &apiErr) || apiErr.Status != 404 {
		k.t.Errorf("after the delete the key reads %v, want 404", err)
	}
}

// create: a new key is created only when it is new.
func (k kvPage) create() {
	keyInput, valueInput := chromedp.CSS("form.kv-create input[name=key]"), chromedp.CSS("form.kv-create textarea[name=value]")
	k.b.do("create an existing key", click(".kv-new"), chromedp.WaitVisible(chromedp.CSS("form.kv-create")),
		clear("form.kv-create input[name=key]"), // it starts as the prefix listed
		chromedp.SendKeys(keyInput, k.prefix+"k00"), chromedp.SendKeys(valueInput, "clobbered"),
		click("form.kv-create button[type=submit]"))
	k.b.waitFor("the existing key refused", `[...document.querySelectorAll('form.kv-create .field-error')].some((e) => !e.hidden && e.textContent.includes('exists'))`)
	k.b.do("create a new key", clear("form.kv-create input[name=key]"), chromedp.SendKeys(keyInput, k.prefix+"new"),
		click("form.kv-create button[type=submit]"))
	k.b.waitFor("the new key shown", hasText(".kv-detail h2", k.prefix+"new")+` && document.querySelector('.kv-value').textContent === 'clobbered'`)
	if v, ver, err := k.get(k.prefix + "new"); err != nil || v != "clobbered" || ver != 1 {
		k.t.Errorf("the new key holds %q version %d (%v)", v, ver, err)
	}
	if v, _, err := k.get(k.prefix + "k00"); err != nil || v != "value 00" {
		k.t.Errorf("the existing key holds %q (%v), want it untouched", v, err)
	}
}
