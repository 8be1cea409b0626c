package testcluster_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/config"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// Short links: a link redirects on every node the moment it is created, and
// stops on every node within 5 s of its deletion.
func TestAPI_Links(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		ctx := apiCtx(t)
		n := c.Len()
		admin := signUpAdmin(t, c, 0, "root")
		lena := signUp(t, c, 1, 1, "lena")
		mark := signUp(t, c, n-1, n-1, "mark")

		const code = "docs"
		far := noReplica(c, code)
		if n == 4 && far < 0 {
			t.Fatal("a 4-node RF3 cluster has no node without a replica of the link's partition")
		}
		if far < 0 {
			far = n - 1
		} else {
			t.Logf("n%d holds no replica of link %q", far+1, code)
		}
		const target = "https://example.com/docs?page=1"
		l, err := as(c, 0, lena).CreateLink(ctx, target, client.LinkOptions{Code: code})
		if err != nil || l.Code != code || l.URL != target || l.CreatedBy != "lena" || !strings.HasSuffix(l.ShortURL, "/s/"+code) {
			t.Fatalf("create = %+v, %v", l, err)
		}
		t.Run("redirects at once on every node", func(t *testing.T) {
			for i := 0; i < n; i++ {
				loc, err := anonAt(c, i).Resolve(ctx, code) // no token needed
				if err != nil || loc != target {
					t.Fatalf("resolve via n%d = %q, %v", i+1, loc, err)
				}
				if status, loc := atLinksListener(t, c, i, code); status != http.StatusFound || loc != target {
					t.Fatalf("n%d's links listener answers %d to %q", i+1, status, loc)
				}
			}
		})
		t.Run("the links listener takes request heads of up to 8 KiB", func(t *testing.T) {
			for size, want := range map[int]int{6 << 10: http.StatusFound, 9 << 10: http.StatusRequestHeaderFieldsTooLarge} {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Node(0).LinksAddr()+"/s/"+code, nil)
				req.Header.Set("Cookie", "c="+strings.Repeat("x", size))
				resp, err := (&http.Transport{}).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				_ = resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("a %d-byte cookie: %d, want %d", size, resp.StatusCode, want)
				}
			}
		})
		t.Run("refusals change nothing", func(t *testing.T) {
			for i := 0; i < n; i++ {
				_, err := as(c, i, mark).CreateLink(ctx, "https://evil.example", client.LinkOptions{Code: code})
				mustStatus(t, err, http.StatusConflict, "conflict")
			}
			for _, bad := range []string{"ftp://example.com/f", "example.com", "javascript:alert(1)", "https://user:pw@example.com/"} {
				_, err := as(c, far, mark).CreateLink(ctx, bad, client.LinkOptions{})
				mustStatus(t, err, http.StatusBadRequest, "invalid")
			}
			_, err := as(c, far, mark).CreateLink(ctx, target, client.LinkOptions{Code: "no spaces"})
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			mustStatus(t, as(c, far, mark).DeleteLink(ctx, code), http.StatusForbidden, "forbidden")
			mine, err := as(c, 0, mark).MyLinks(ctx)
			if err != nil || len(mine) != 0 {
				t.Fatalf("mark's links after refusals = %+v, %v", mine, err)
			}
			info, err := as(c, far, mark).LinkInfo(ctx, code)
			if err != nil || info.URL != target || info.CreatedBy != "lena" {
				t.Fatalf("info after refusals = %+v, %v", info, err)
			}
		})
		t.Run("generated codes, mine and hits", func(t *testing.T) {
			gen, err := as(c, far, lena).CreateLink(client.WithIdempotencyKey(ctx, "link-1"), "http://example.org/x", client.LinkOptions{})
			if err != nil || len(gen.Code) != 7 {
				t.Fatalf("generated = %+v, %v", gen, err)
			}
			again, err := as(c, 1, lena).CreateLink(client.WithIdempotencyKey(ctx, "link-1"), "http://example.org/x", client.LinkOptions{})
			if err != nil || again.Code != gen.Code {
				t.Fatalf("retry = %+v, %v; want code %s", again, err, gen.Code)
			}
			mine, err := as(c, n-1, lena).MyLinks(ctx)
			if err != nil || len(mine) != 2 || mine[0].Code != gen.Code || mine[1].Code != code {
				t.Fatalf("lena's links = %+v, %v", mine, err)
			}
			// Every node counted one redirect above; the counts are flushed
			// every 2 s.
			poll.Until(t, 10*time.Second, "hits counted", func() error {
				info, err := as(c, 0, lena).LinkInfo(ctx, code)
				if err != nil {
					t.Fatal(err)
				}
				if info.Hits < uint64(n) {
					return fmt.Errorf("%d hits, want %d", info.Hits, n)
				}
				return nil
			})
			_, err = as(c, 0, lena).LinkInfo(ctx, "unknown")
			mustStatus(t, err, http.StatusNotFound, "not_found")
		})
		t.Run("a deleted link stops everywhere within 5s", func(t *testing.T) {
			for i := 0; i < n; i++ { // every node has the link cached now
				if _, err := anonAt(c, i).Resolve(ctx, code); err != nil {
					t.Fatal(err)
				}
			}
			if err := as(c, far, lena).DeleteLink(ctx, code); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				cl := anonAt(c, i)
				took := poll.Until(t, 5*time.Second, fmt.Sprintf("n%d stops redirecting", i+1), func() error {
					_, err := cl.Resolve(ctx, code)
					var e *client.Error
					if errors.As(err, &e) && e.Status == http.StatusNotFound {
						return nil
					}
					return fmt.Errorf("resolve = %v", err)
				})
				t.Logf("n%d stopped redirecting %v after the check began", i+1, took.Round(time.Millisecond))
				if status, loc := atLinksListener(t, c, i, code); status != http.StatusNotFound {
					t.Errorf("n%d's links listener answers %d to %q after the deletion", i+1, status, loc)
				}
			}
			_, err := as(c, 0, lena).LinkInfo(ctx, code)
			mustStatus(t, err, http.StatusNotFound, "not_found")
			gen, err := as(c, 1, mark).CreateLink(ctx, "https://example.net", client.LinkOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := as(c, far, admin).DeleteLink(ctx, gen.Code); err != nil {
				t.Fatalf("an admin deletes: %v", err)
			}
		})
	})
}

// atLinksListener asks node i's links listener (--links) for /s/code and
// returns the status and Location, without following the redirect.
func atLinksListener(t *testing.T, c *testcluster.Cluster, i int, code string) (int, string) {
	t.Helper()
	hc := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := hc.Get("http://" + c.Node(i).LinksAddr() + "/s/" + code)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// TestAPI_LinksOnAShortDomain: with --links-url a link's short URL is the
// short domain's root, which every node's links listener serves, and no
// link may point at that domain.
func TestAPI_LinksOnAShortDomain(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const domain = "https://s.example"
	c := testcluster.New(t, testcluster.Options{
		Nodes:             3,
		ReplicationFactor: 3,
		NoSync:            true,
		Configure: func(_ int, cfg *config.Config) {
			cfg.RateLimit = 1 << 20
			cfg.LinksAddr = "127.0.0.1:0"
			cfg.LinksURL = domain + "/"
		},
	})
	ctx := apiCtx(t)
	lena := signUp(t, c, 0, 0, "lena")
	const code, target = "docs", "https://example.com/docs?page=1"
	l, err := as(c, 1, lena).CreateLink(ctx, target, client.LinkOptions{Code: code})
	if err != nil || l.ShortURL != domain+"/"+code {
		t.Fatalf("create = %+v, %v; want short_url %s/%s", l, err, domain, code)
	}
	if info, err := as(c, 2, lena).LinkInfo(ctx, code); err != nil || info.ShortURL != l.ShortURL {
		t.Fatalf("info via n3 = %+v, %v", info, err)
	}
	hc := &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for i := range c.Len() {
		resp, err := hc.Get("http://" + c.Node(i).LinksAddr() + "/" + code)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != target {
			t.Fatalf("n%d's links listener answers /%s with %d to %q", i+1, code, resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, err = hc.Get("http://" + c.Node(i).LinksAddr() + "/" + code + "+")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), domain+"/"+code) {
			t.Fatalf("n%d's preview of /%s+: %d %s", i+1, code, resp.StatusCode, page)
		}
	}
	for _, loop := range []string{domain + "/other", "http://S.EXAMPLE:8080/docs"} {
		_, err := as(c, 0, lena).CreateLink(ctx, loop, client.LinkOptions{Code: "loop"})
		mustStatus(t, err, http.StatusBadRequest, "invalid")
		if err == nil || !strings.Contains(err.Error(), "serves this cluster's short links at every path") {
			t.Errorf("a link to %s: %v", loop, err)
		}
	}
	// Every node's links listener serves a code at every path, whatever
	// the public URL: a link to one, its own or a member's, would loop.
	// n1 learns the others' listeners by gossip.
	poll.Until(t, 10*time.Second, "n1 knows every member's links listener", func() error {
		known := 0
		for _, m := range c.Node(0).Gossip().Members() {
			if m.Meta.LinksAddr != "" {
				known++
			}
		}
		if known < c.Len() {
			return fmt.Errorf("%d of %d links listeners gossiped", known, c.Len())
		}
		return nil
	})
	for i := range c.Len() {
		addr := c.Node(i).LinksAddr()
		for _, loop := range []string{"http://" + addr + "/docs", "https://" + addr + "/any/path?q=1"} {
			_, err := as(c, 0, lena).CreateLink(ctx, loop, client.LinkOptions{Code: "loop"})
			mustStatus(t, err, http.StatusBadRequest, "invalid")
			if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "links listener") {
				t.Errorf("a link to n%d's links listener %s: %v", i+1, loop, err)
			}
		}
	}
	_, err = as(c, 0, lena).LinkInfo(ctx, "loop")
	mustStatus(t, err, http.StatusNotFound, "not_found")
}
