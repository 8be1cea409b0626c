package testcluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// TestWeb_Search drives the rooms page's search box in headless Chromium:
// the words found are marked (mark elements), markup in a message shows as
// text, a whisper to someone else is never listed, and a result opens its
// room, on a desktop's screen and a phone's.
func TestWeb_Search(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	b := newBrowser(t)
	c := newAPICluster(t, 1, 1)
	base := "http://" + c.Node(0).HTTPAddr()
	for _, s := range screens {
		t.Run(s.name, func(t *testing.T) {
			ctx := apiCtx(t)
			room := "plans-" + s.name
			alice := signUp(t, c, 0, 0, "alice-"+s.name)
			bob := signUp(t, c, 0, 0, "bob-"+s.name)
			carol := signUp(t, c, 0, 0, "carol-"+s.name)
			if _, err := bob.CreateRoom(ctx, client.RoomSpec{Name: room}); err != nil {
				t.Fatal(err)
			}
			for _, cl := range []*client.Client{alice, carol} {
				if _, err := cl.JoinRoom(ctx, room, ""); err != nil {
					t.Fatal(err)
				}
			}
			word := "quarterly" + s.name
			for _, text := range []string{"the " + word + " report <b>is late</b>", "lunch at noon", "an unrelated note"} {
				if _, err := bob.Post(ctx, room, text, client.PostOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := bob.Post(ctx, room, "secret "+word+" plan", client.PostOptions{To: []string{"carol-" + s.name}}); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, 10*time.Second, "the message indexed", func() error {
				res, err := alice.Search(ctx, client.SearchQuery{Q: word})
				if err != nil || len(res) == 0 {
					return fmt.Errorf("%d results, %v: %w", len(res), err, testcluster.ErrNotYet)
				}
				return nil
			})
			p := polish{b: b, c: c, base: base, s: s}
			tb := p.open(t, "alice-"+s.name, alice, "#/rooms")
			tb.do("search", chromedp.SendKeys(chromedp.CSS("form.search input[name=q]"), word+" report\n"))
			tb.waitFor("one result, words marked", fmt.Sprintf(`(() => { const li = document.querySelectorAll('.search-results li');
				if (li.length !== 1) return false;
				const marks = [...li[0].querySelectorAll('.search-text mark')].map((m) => m.textContent.toLowerCase());
				return marks.includes(%s) && marks.includes('report') && !li[0].querySelector('.search-text b') &&
					li[0].querySelector('.search-text').textContent.includes('<b>is late</b>'); })()`, js(word)))
			tb.check("no whisper to others listed", `[...document.querySelectorAll('.search-results li')].some((li) => li.textContent.includes('secret')) ? 'a whisper to bob is listed' : ''`)
			tb.screenshot("search-" + s.name)
			tb.do("open the result", clickJS(".search-results li a"))
			tb.waitFor("the room opened", fmt.Sprintf(`location.hash === '#/room/' + %s && [...document.querySelectorAll('.events .msg .text')].some((m) => m.textContent.includes('report'))`, js(room)))
			tb.checkConsole()
		})
	}
}
