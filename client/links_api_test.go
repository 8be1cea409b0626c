package client_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	goqr "github.com/piglig/go-qr"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/api/openapi/openapitest"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/servicetest"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// linkServer is a real api.Server whose link service runs on a clock the
// test moves, and knows the server's own addresses (for the loop check).
type linkServer struct {
	*fullServer
	links *link.Service
	clock *statetest.Clock
	host  string // the test server's host:port
}

func newLinkServer(t *testing.T) *linkServer {
	t.Helper()
	st := servicetest.New(t, servicetest.Options{})
	ls := &linkServer{clock: statetest.NewClock(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))}
	var err error
	ls.links, err = link.NewService(st.LinkRep, link.Config{
		Now:      ls.clock.Now,
		SelfURLs: func() []string { return []string{"https://par.ly", ls.host} },
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(openapitest.Handler(t, api.New(api.Config{
		KV: st.KV, Status: &fakeStatus{ready: true}, Accounts: st.Accounts, Links: ls.links, PublicURL: "https://par.ly",
	}).Handler()))
	t.Cleanup(srv.Close)
	ls.host = strings.TrimPrefix(srv.URL, "http://")
	ls.fullServer = &fullServer{Stack: st, base: srv.URL, hc: srv.Client()}
	return ls
}

// visit follows /s/code as a browser would, with a User-Agent and Referer,
// and returns the status.
func (s *linkServer) visit(t *testing.T, code, userAgent, referer string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base+"/s/"+code, nil)
	req.Header.Set("User-Agent", userAgent)
	if referer != "" {
		req.Header.Set("Referer", referer)
	}
	hc := *s.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func mustResolve(t *testing.T, c *client.Client, code, want string, wantStatus int) {
	t.Helper()
	loc, status, err := c.ResolveStatus(context.Background(), code)
	if err != nil || loc != want || status != wantStatus {
		t.Fatalf("resolve %s = %q %d, %v; want %q %d", code, loc, status, err, want, wantStatus)
	}
}

func TestClientAPI_LinkLifecycle(t *testing.T) {
	ctx := context.Background()
	s := newLinkServer(t)
	root := s.user(t, "root") // the first account: an admin
	ann := s.user(t, "ann")
	ben := s.user(t, "ben")
	anon := client.New(s.base, client.WithHTTPClient(s.hc))
	now := s.clock.Now()

	l, err := ann.CreateLink(ctx, "https://example.com/a", client.LinkOptions{
		Code: "life", RedirectStatus: 301, Tags: []string{"Docs", "q1", "docs"},
		ExpiresAt: now.Add(time.Hour).UnixMilli(), MaxVisits: 1000,
	})
	if err != nil || l.RedirectStatus != 301 || !reflect.DeepEqual(l.Tags, []string{"docs", "q1"}) ||
		l.ExpiresAt != now.Add(time.Hour).UnixMilli() || l.MaxVisits != 1000 || l.State != "active" || l.Disabled {
		t.Fatalf("create = %+v, %v", l, err)
	}
	mustResolve(t, anon, "life", "https://example.com/a", 301)
	for _, st := range []int{302, 307, 308} {
		if _, err := ann.UpdateLink(ctx, "life", client.LinkUpdate{RedirectStatus: ptr(st)}); err != nil {
			t.Fatal(err)
		}
		mustResolve(t, anon, "life", "https://example.com/a", st)
	}

	t.Run("edit by the owner only", func(t *testing.T) {
		u, err := ann.UpdateLink(ctx, "life", client.LinkUpdate{URL: ptr("https://example.com/b"), Tags: ptr([]string{"moved"})})
		if err != nil || u.URL != "https://example.com/b" || !reflect.DeepEqual(u.Tags, []string{"moved"}) || u.RedirectStatus != 308 {
			t.Fatalf("update = %+v, %v", u, err)
		}
		mustResolve(t, anon, "life", "https://example.com/b", 308) // at once on this node
		before, _ := ann.LinkInfo(ctx, "life")
		for _, tc := range []struct {
			who          *client.Client
			code         string
			u            client.LinkUpdate
			status       int
			errCode, msg string
		}{
			{ben, "life", client.LinkUpdate{URL: ptr("https://evil.example")}, 403, "forbidden", "owner"},
			{root, "life", client.LinkUpdate{Disabled: ptr(true)}, 403, "forbidden", "owner"},
			{ann, "nope", client.LinkUpdate{Disabled: ptr(true)}, 404, "not_found", ""},
			{ann, "life", client.LinkUpdate{}, 400, "invalid", "nothing to change"},
			{ann, "life", client.LinkUpdate{URL: ptr("ftp://example.com")}, 400, "invalid", "url"},
			{ann, "life", client.LinkUpdate{RedirectStatus: ptr(303)}, 400, "invalid", "redirect_status"},
			{ann, "life", client.LinkUpdate{ExpiresAt: ptr(now.Add(-time.Minute).UnixMilli())}, 400, "invalid", "expires_at"},
			{ann, "life", client.LinkUpdate{ExpiresAt: ptr(int64(-5))}, 400, "invalid", "expires_at"},
			{ann, "life", client.LinkUpdate{Tags: ptr([]string{"two words"})}, 400, "invalid", "tags"},
			{ann, "life", client.LinkUpdate{Tags: ptr(make([]string, 11))}, 400, "invalid", "tags"},
		} {
			_, err := tc.who.UpdateLink(ctx, tc.code, tc.u)
			e := mustAPIError(t, err, tc.status, tc.errCode)
			if !strings.Contains(e.Message, tc.msg) {
				t.Errorf("update %+v: message %q does not name %q", tc.u, e.Message, tc.msg)
			}
		}
		if after, _ := ann.LinkInfo(ctx, "life"); !reflect.DeepEqual(after, before) {
			t.Fatalf("refused updates changed the link: %+v, then %+v", before, after)
		}
	})

	t.Run("disable and enable", func(t *testing.T) {
		d, err := ann.SetLinkDisabled(ctx, "life", true)
		if err != nil || !d.Disabled || d.State != "disabled" {
			t.Fatalf("disable = %+v, %v", d, err)
		}
		_, err = anon.Resolve(ctx, "life")
		mustAPIError(t, err, 410, "gone")
		if _, err := ann.SetLinkDisabled(ctx, "life", false); err != nil {
			t.Fatal(err)
		}
		mustResolve(t, anon, "life", "https://example.com/b", 308)
	})

	t.Run("expiry", func(t *testing.T) {
		_, err := ann.CreateLink(ctx, "https://example.com", client.LinkOptions{ExpiresAt: now.Add(-time.Second).UnixMilli()})
		mustAPIError(t, err, 400, "invalid")
		s.clock.Advance(time.Hour)
		_, err = anon.Resolve(ctx, "life")
		mustAPIError(t, err, 410, "gone")
		if info, _ := ann.LinkInfo(ctx, "life"); info.State != "expired" {
			t.Fatalf("state after expiry = %q", info.State)
		}
		u, err := ann.UpdateLink(ctx, "life", client.LinkUpdate{ExpiresAt: ptr(int64(0))}) // never
		if err != nil || u.ExpiresAt != 0 || u.State != "active" {
			t.Fatalf("clear expiry = %+v, %v", u, err)
		}
		mustResolve(t, anon, "life", "https://example.com/b", 308)
	})

	t.Run("max visits", func(t *testing.T) {
		if _, err := ann.CreateLink(ctx, "https://example.com/once", client.LinkOptions{Code: "twice", MaxVisits: 2}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			mustResolve(t, anon, "twice", "https://example.com/once", 302)
		}
		_, err := anon.Resolve(ctx, "twice")
		mustAPIError(t, err, 410, "gone")
		if err := s.links.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		info, err := ann.LinkInfo(ctx, "twice")
		if err != nil || info.Hits != 2 || info.State != "exhausted" {
			t.Fatalf("after the limit: %+v, %v", info, err)
		}
		if _, err := ann.UpdateLink(ctx, "twice", client.LinkUpdate{MaxVisits: ptr(uint64(3))}); err != nil {
			t.Fatal(err)
		}
		mustResolve(t, anon, "twice", "https://example.com/once", 302)
		_, err = anon.Resolve(ctx, "twice")
		mustAPIError(t, err, 410, "gone")
	})
}

// TestClientAPI_LinkLoops refuses targets that lead back to /s/ here, in
// every spelling, and accepts near misses.
func TestClientAPI_LinkLoops(t *testing.T) {
	ctx := context.Background()
	s := newLinkServer(t)
	ann := s.user(t, "ann")
	_, port, _ := strings.Cut(s.host, ":")
	for _, u := range []string{
		"https://par.ly/s/x", "HTTPS://PAR.LY./s/x", "http://par.ly/s/x", "https://par.ly:8443//s/../s/x",
		"https://par.ly/%73/x", "https://par.ly/S/x+", "https://par.ly/a/../s/x", "https://par.ly/s",
		"http://" + s.host + "/s/x", "http://localhost:" + port + "/s/x", "http://2130706433:" + port + "/s/x",
		"http://0x7f.1:" + port + "/s/x", "http://[::1]:" + port + "/s/x",
	} {
		_, err := ann.CreateLink(ctx, u, client.LinkOptions{})
		if e := mustAPIError(t, err, 400, "invalid"); !strings.Contains(e.Message, "url") {
			t.Errorf("%s: message %q does not name url", u, e.Message)
		}
	}
	l, _ := ann.CreateLink(ctx, "https://example.com", client.LinkOptions{Code: "ok"})
	_, err := ann.UpdateLink(ctx, l.Code, client.LinkUpdate{URL: ptr("https://par.ly/s/ok")})
	mustAPIError(t, err, 400, "invalid")
	for _, u := range []string{
		"https://par.ly/docs", "https://par.ly/sx", "https://other.example/s/x", "http://localhost:1/s/x", "https://par.ly.example/s/x",
	} {
		if _, err := ann.CreateLink(ctx, u, client.LinkOptions{}); err != nil {
			t.Errorf("%s refused: %v", u, err)
		}
	}
}

func TestClientAPI_LinkStats(t *testing.T) {
	ctx := context.Background()
	s := newLinkServer(t)
	root := s.user(t, "root")
	ann := s.user(t, "ann")
	ben := s.user(t, "ben")
	if _, err := ann.CreateLink(ctx, "https://example.com", client.LinkOptions{Code: "st"}); err != nil {
		t.Fatal(err)
	}
	const (
		chrome  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
		iphone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
		firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
		crawler = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	)
	visits := []struct{ ua, ref string }{
		{chrome, "https://News.Example.org/item?id=1"}, {chrome, "https://news.example.org/x"}, {iphone, ""},
		{firefox, "https://mail.example.com/"}, {crawler, "https://news.example.org/"}, {"", ""},
	}
	for _, v := range visits {
		if st := s.visit(t, "st", v.ua, v.ref); st != http.StatusFound {
			t.Fatalf("visit = %d", st)
		}
	}
	s.clock.Advance(24 * time.Hour)
	s.visit(t, "st", chrome, "")
	if err := s.links.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := ann.LinkStats(ctx, "st", 7)
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits != 7 || st.Bots != 2 || st.Direct != 2 || len(st.Days) != 2 ||
		st.Days[0].Date != "2026-03-04" || st.Days[0].Visits != 6 || st.Days[0].Bots != 2 ||
		st.Days[1].Date != "2026-03-05" || st.Days[1].Visits != 1 {
		t.Fatalf("stats = %+v", st)
	}
	wantCounts := func(name string, got []client.NameCount, want ...client.NameCount) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %+v, want %+v", name, got, want)
		}
	}
	wantCounts("referrers", st.Referrers, client.NameCount{Name: "news.example.org", Visits: 2}, client.NameCount{Name: "mail.example.com", Visits: 1})
	wantCounts("browsers", st.Browsers, client.NameCount{Name: "Chrome", Visits: 3}, client.NameCount{Name: "Firefox", Visits: 1}, client.NameCount{Name: "Safari", Visits: 1})
	wantCounts("os", st.OS, client.NameCount{Name: "Windows", Visits: 3}, client.NameCount{Name: "Linux", Visits: 1}, client.NameCount{Name: "iOS", Visits: 1})
	if one, _ := ann.LinkStats(ctx, "st", 1); len(one.Days) != 1 || one.Visits != 7 {
		t.Fatalf("one day of stats = %+v", one)
	}
	if byAdmin, err := root.LinkStats(ctx, "st", 0); err != nil || byAdmin.Visits != 7 {
		t.Fatalf("admin stats = %+v, %v", byAdmin, err)
	}
	_, err = ben.LinkStats(ctx, "st", 0)
	mustAPIError(t, err, 403, "forbidden")
	_, err = ann.LinkStats(ctx, "none", 0)
	mustAPIError(t, err, 404, "not_found")
	_, err = ann.LinkStats(ctx, "st", 400)
	mustAPIError(t, err, 400, "invalid")
	if info, _ := ann.LinkInfo(ctx, "st"); info.Hits != 7 || info.Bots != 2 {
		t.Fatalf("info = %+v", info)
	}
}

func TestClientAPI_LinkTagsAndFilters(t *testing.T) {
	ctx := context.Background()
	s := newLinkServer(t)
	ann := s.user(t, "ann")
	for _, l := range []struct {
		code string
		tags []string
	}{{"a-docs", []string{"docs"}}, {"b-blog", []string{"blog", "Q1"}}, {"c-both", []string{"docs", "blog"}}} {
		if _, err := ann.CreateLink(ctx, "https://example.com/"+l.code, client.LinkOptions{Code: l.code, Tags: l.tags}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ann.SetLinkDisabled(ctx, "b-blog", true); err != nil {
		t.Fatal(err)
	}

	codes := func(f client.LinkFilter) string {
		t.Helper()
		ls, err := ann.ListLinks(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range ls {
			out = append(out, l.Code)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		f    client.LinkFilter
		want string
	}{
		{client.LinkFilter{}, "c-both,b-blog,a-docs"},
		{client.LinkFilter{Tag: "DOCS"}, "c-both,a-docs"},
		{client.LinkFilter{Tag: "q1"}, "b-blog"},
		{client.LinkFilter{Query: "BLOG"}, "b-blog"},
		{client.LinkFilter{State: "disabled"}, "b-blog"},
		{client.LinkFilter{State: "active", Tag: "blog"}, "c-both"},
		{client.LinkFilter{Tag: "none"}, ""},
	} {
		if got := codes(tc.f); got != tc.want {
			t.Errorf("ListLinks(%+v) = %q, want %q", tc.f, got, tc.want)
		}
	}
	_, err := ann.ListLinks(ctx, client.LinkFilter{State: "gone"})
	mustAPIError(t, err, 400, "invalid")
	_, err = ann.ListLinks(ctx, client.LinkFilter{Tag: "a,b"})
	mustAPIError(t, err, 400, "invalid")
	_, err = ann.CreateLink(ctx, "https://example.com", client.LinkOptions{Tags: []string{strings.Repeat("t", 33)}})
	mustAPIError(t, err, 400, "invalid")
}

func TestClientAPI_LinkQRAndPreview(t *testing.T) {
	ctx := context.Background()
	s := newLinkServer(t)
	ann := s.user(t, "ann")
	ben := s.user(t, "ben")
	const target = `https://example.com/?q=<script>alert("x")</script>&a='b'`
	if _, err := ann.CreateLink(ctx, target, client.LinkOptions{Code: "qr"}); err != nil {
		t.Fatal(err)
	}
	b, err := ben.LinkQR(ctx, "qr", "png", 3)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("qr png: %v", err)
	}
	if got, err := goqr.Decode(img); err != nil || got != "https://par.ly/s/qr" {
		t.Fatalf("the QR code says %q, %v", got, err)
	}
	svg, err := ben.LinkQR(ctx, "qr", "svg", 0)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("svg = %.60q, %v", svg, err)
	}
	for _, tc := range []struct {
		code, format string
		scale        int
		status       int
		errCode      string
	}{
		{"qr", "gif", 0, 400, "invalid"}, {"qr", "png", 33, 400, "invalid"}, {"none", "png", 0, 404, "not_found"},
	} {
		_, err := ben.LinkQR(ctx, tc.code, tc.format, tc.scale)
		mustAPIError(t, err, tc.status, tc.errCode)
	}
	_, err = client.New(s.base, client.WithHTTPClient(s.hc)).LinkQR(ctx, "qr", "png", 0)
	mustAPIError(t, err, 401, "unauthorized")

	page, err := client.New(s.base, client.WithHTTPClient(s.hc)).LinkPreview(ctx, "qr")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Fatalf("the preview does not escape the target: %s", page)
	}
	_, err = client.New(s.base, client.WithHTTPClient(s.hc)).LinkPreview(ctx, "none")
	if e, ok := err.(*client.Error); !ok || e.Status != 404 {
		t.Fatalf("preview of an unknown code = %v", err)
	}
	if err := s.links.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if info, _ := ann.LinkInfo(ctx, "qr"); info.Hits != 0 {
		t.Fatalf("a preview counted %d visits", info.Hits)
	}
}

func TestClientAPI_LinkImport(t *testing.T) {
	ctx := context.Background()
	s := newLinkServer(t)
	ann := s.user(t, "ann")
	if _, err := ann.CreateLink(ctx, "https://example.com", client.LinkOptions{Code: "taken"}); err != nil {
		t.Fatal(err)
	}
	csv := "url,code,tags,max_visits,expires_at,redirect_status\n" +
		"https://example.com/1,imp-1,a;b,,,\n" +
		"# a comment\n" +
		"ftp://example.com/2,imp-2,,,,\n" +
		"https://example.com/3,taken,,,,\n" +
		"https://example.com/4,,,many,,\n" +
		"https://example.com/5,imp-5,,10,2030-01-02T03:04:05Z,307\n" +
		"https://par.ly/s/imp-1,,,,,\n"
	ictx := client.WithIdempotencyKey(ctx, "import-1")
	rep, err := ann.ImportLinks(ictx, strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		n            int
		code, errors string
	}
	want := []line{{2, "imp-1", ""}, {4, "imp-2", "invalid"}, {5, "taken", "conflict"}, {6, "", "invalid"}, {7, "imp-5", ""}, {8, "", "invalid"}}
	if rep.Created != 2 || rep.Failed != 4 || len(rep.Lines) != len(want) {
		t.Fatalf("report = %+v", rep)
	}
	for i, w := range want {
		got := rep.Lines[i]
		errCode := ""
		if got.Error != nil {
			errCode = got.Error.Code
		}
		if got.Line != w.n || got.Code != w.code || errCode != w.errors || (errCode == "" && got.ShortURL != "https://par.ly/s/"+w.code) {
			t.Errorf("line %d = %+v (error %v), want %+v", i, got, got.Error, w)
		}
	}
	if !strings.Contains(rep.Lines[3].Error.Message, "max_visits") {
		t.Errorf("line 6's error does not name the column: %q", rep.Lines[3].Error.Message)
	}
	l5, err := ann.LinkInfo(ctx, "imp-5")
	if err != nil || l5.MaxVisits != 10 || l5.RedirectStatus != 307 || l5.ExpiresAt != time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli() {
		t.Fatalf("imp-5 = %+v, %v", l5, err)
	}
	// A retry with the same key creates nothing more.
	again, err := ann.ImportLinks(ictx, strings.NewReader(csv))
	if err != nil || again.Created != 2 {
		t.Fatalf("retry = %+v, %v", again, err)
	}
	if mine, _ := ann.MyLinks(ctx); len(mine) != 3 {
		t.Fatalf("after a retried import: %d links, want 3", len(mine))
	}
	// Without a header: url, code, in that order.
	rep, err = ann.ImportLinks(ctx, strings.NewReader("https://example.com/h1,plain-1\nhttps://example.com/h2\n"))
	if err != nil || rep.Created != 2 || rep.Lines[0].Code != "plain-1" || len(rep.Lines[1].Code) != 7 {
		t.Fatalf("headerless import = %+v, %v", rep, err)
	}
	before, _ := ann.MyLinks(ctx)
	for _, tc := range []struct {
		body    string
		status  int
		errCode string
	}{
		{"", 400, "invalid"},
		{"url,colour\nhttps://example.com,red\n", 400, "invalid"},
		{"\"unterminated\n", 400, "invalid"},
		{strings.Repeat("https://example.com/x\n", 1001), 413, "too_large"},
	} {
		_, err := ann.ImportLinks(ctx, strings.NewReader(tc.body))
		mustAPIError(t, err, tc.status, tc.errCode)
	}
	if after, _ := ann.MyLinks(ctx); len(after) != len(before) {
		t.Fatalf("refused imports created links: %d, then %d", len(before), len(after))
	}

}
