package testcluster_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// TestWeb_LinkPage drives a short link's page in headless Chromium: the
// list filtered by tag leads to it; it shows the daily chart, the
// breakdowns and the QR code (all drawn without inline markup, under the
// strict policy), and edits the link: a bad URL is named at its field, a
// good edit and a disable take effect.
func TestWeb_LinkPage(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := newAPICluster(t, 1, 1)
	base := "http://" + c.Node(0).HTTPAddr()
	ctx := apiCtx(t)
	lena := signUp(t, c, 0, 0, "lena")
	if _, err := lena.CreateLink(ctx, "https://example.com/start", client.LinkOptions{Code: "page", Tags: []string{"web"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := lena.CreateLink(ctx, "https://example.com/other", client.LinkOptions{Code: "other"}); err != nil {
		t.Fatal(err)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, ua := range []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	} {
		req, _ := http.NewRequest(http.MethodGet, base+"/s/page", nil)
		req.Header.Set("User-Agent", ua)
		req.Header.Set("Referer", "https://news.example.org/item")
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	poll.Until(t, 10*time.Second, "the visits flushed", func() error {
		if st, err := lena.LinkStats(ctx, "page", 0); err != nil || st.Visits != 3 {
			return fmt.Errorf("stats = %+v, %v", st, err)
		}
		return nil
	})

	S := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	session := fmt.Sprintf(`{"token":%s,"username":"lena","expires_at":%d}`, js(lena.Token()), time.Now().Add(time.Hour).UnixMilli())
	b.do("sign in", chromedp.Navigate(base+"/"), chromedp.WaitReady(S("#main")),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('parley.session', %s)`, js(session))),
		chromedp.Navigate(base+"/#/links"), chromedp.Reload(), chromedp.WaitVisible(S(".links-filter input[name=tag]")))
	b.waitFor("both links listed", `document.querySelectorAll('.links-mine tr[data-code]').length === 2`)
	b.do("scroll to the list", chromedp.ScrollIntoView(S(".links-mine")))
	b.screenshot("links")
	b.do("filter by tag", chromedp.SendKeys(S(".links-filter input[name=tag]"), "WEB\n"))
	b.waitFor("only the tagged link", `document.querySelectorAll('.links-mine tr[data-code]').length === 1 && document.querySelector('.links-mine tr[data-code=page]') !== null`)
	b.do("open its page", chromedp.Click(S(".links-mine tr[data-code=page] a.details")))

	b.waitFor("the daily chart", `document.querySelectorAll('.day-chart g.day').length === 30 &&
		[...document.querySelectorAll('.day-chart g.day')].at(-1).dataset.visits === '3'`)
	b.waitFor("the browsers", hasText(".breakdown.browsers td.name", "Chrome")+" && "+hasText(".breakdown.browsers td.name", "Firefox"))
	b.waitFor("the referrer host", hasText(".breakdown.referrers td.name", "news.example.org"))
	b.waitFor("the QR code", `(document.querySelector('img.qr') || {}).src?.startsWith('data:image/png') &&
		document.querySelector('img.qr').naturalWidth > 0`)
	b.check("the preview link", `document.querySelector('a.preview').href.endsWith('/s/page+') ? '' : document.querySelector('a.preview').href`)
	// The heading names the short URL as people type it, without a scheme.
	b.check("the heading", fmt.Sprintf(`document.querySelector('.link-head h1').textContent.startsWith(%s) ? '' : document.querySelector('.link-head h1').textContent`,
		js(c.Node(0).HTTPAddr()+"/s/page ")))

	b.screenshot("link-page")
	b.do("save a bad URL", clear(".link-form input[name=url]"), chromedp.SendKeys(S(".link-form input[name=url]"), "ftp://example.com/x"),
		chromedp.Click(S(".link-form button[type=submit]")))
	b.waitFor("the URL named", `document.querySelector('.link-form input[name=url]').getAttribute('aria-invalid') === 'true'`)
	if l, _ := lena.LinkInfo(ctx, "page"); l.URL != "https://example.com/start" {
		t.Fatalf("a refused edit changed the link: %+v", l)
	}
	b.do("save a new URL and disable", clear(".link-form input[name=url]"), chromedp.SendKeys(S(".link-form input[name=url]"), "https://example.com/moved"),
		chromedp.Click(S(".link-form input[name=disabled]")), chromedp.Click(S(".link-form button[type=submit]")))
	b.waitFor("the new state shown", hasText(".link-head .state", "disabled")+" && "+hasText(".link-head .target", "https://example.com/moved"))
	l, err := lena.LinkInfo(ctx, "page")
	if err != nil || l.URL != "https://example.com/moved" || !l.Disabled {
		t.Fatalf("after the edit: %+v, %v", l, err)
	}
	if _, err := anonAt(c, 0).Resolve(ctx, "page"); gone(err) != nil {
		t.Errorf("the disabled link: %v", err)
	}
	b.checkConsole()
}
