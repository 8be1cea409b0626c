package testcluster_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
)

// gone reports whether err is the 410 of a link that does not redirect.
func gone(err error) error {
	var e *client.Error
	if errors.As(err, &e) && e.Status == http.StatusGone {
		return nil
	}
	return fmt.Errorf("resolve = %v, want 410", err)
}

// Short link lifecycle on a real cluster: a visit limit, a disabled link
// and an expired one stop redirecting on every node, and stay stopped on a
// node restarted with an empty cache; links may not point back at any
// member's /s/.
func TestAPI_LinkLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	ctx := apiCtx(t)
	lena := signUp(t, c, 0, 0, "lena")

	create := func(code string, opts client.LinkOptions) {
		t.Helper()
		opts.Code = code
		if _, err := as(c, 0, lena).CreateLink(ctx, "https://example.com/"+code, opts); err != nil {
			t.Fatalf("create %s: %v", code, err)
		}
	}
	create("once", client.LinkOptions{MaxVisits: 3})
	create("off", client.LinkOptions{})
	create("soon", client.LinkOptions{ExpiresAt: time.Now().Add(3 * time.Second).UnixMilli()})

	// One node serves all visits: its own count is exact.
	for i := range 3 {
		if _, err := anonAt(c, 1).Resolve(ctx, "once"); err != nil {
			t.Fatalf("visit %d: %v", i+1, err)
		}
	}
	if err := gone(func() error { _, err := anonAt(c, 1).Resolve(ctx, "once"); return err }()); err != nil {
		t.Fatalf("the 4th visit: %v", err)
	}
	if _, err := as(c, 2, lena).SetLinkDisabled(ctx, "off", true); err != nil {
		t.Fatal(err)
	}
	everywhereGone := func(code string, within time.Duration) {
		t.Helper()
		for i := range c.Len() {
			cl := anonAt(c, i)
			poll.Until(t, within, fmt.Sprintf("%s stops on n%d", code, i+1), func() error {
				_, err := cl.Resolve(ctx, code)
				return gone(err)
			})
		}
	}
	everywhereGone("off", 5*time.Second)
	everywhereGone("soon", 10*time.Second)
	poll.Until(t, 10*time.Second, "the visits flushed", func() error {
		l, err := as(c, 0, lena).LinkInfo(ctx, "once")
		if err != nil || l.Hits != 3 || l.State != "exhausted" {
			return fmt.Errorf("once = %+v, %v", l, err)
		}
		return nil
	})

	c.Kill(1)
	c.Restart(1)
	c.WaitConverged(30 * time.Second)
	for _, code := range []string{"once", "off", "soon"} {
		_, err := anonAt(c, 1).Resolve(ctx, code)
		if err := gone(err); err != nil {
			t.Errorf("%s after n2 restarted: %v", code, err)
		}
	}
	st, err := as(c, 1, lena).LinkStats(ctx, "once", 0)
	if err != nil || st.Visits != 3 || st.Bots != 3 { // the Go client says Go-http-client: a bot
		t.Fatalf("stats after restart = %+v, %v", st, err)
	}
	if _, err := as(c, 1, lena).SetLinkDisabled(ctx, "off", false); err != nil {
		t.Fatal(err)
	}
	for i := range c.Len() {
		cl := anonAt(c, i)
		poll.Until(t, 5*time.Second, fmt.Sprintf("off redirects again on n%d", i+1), func() error {
			_, err := cl.Resolve(ctx, "off")
			return err
		})
	}

	for i := range c.Len() {
		_, err := as(c, 0, lena).CreateLink(ctx, "http://"+c.Node(i).HTTPAddr()+"/s/off", client.LinkOptions{})
		mustStatus(t, err, http.StatusBadRequest, "invalid")
	}
}
