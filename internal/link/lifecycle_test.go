package link

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

func mustApply(t *testing.T, w state.Writer, at int64, cmd []byte) []byte {
	t.Helper()
	res, err := StateMachine{}.Apply(w, state.Meta{TimeMs: at}, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestStateMachine_Update(t *testing.T) {
	mem := state.NewMem()
	mustApply(t, mem, 1, EncodeCreate(Create{Code: "x", CreatedBy: "Alice", URL: "https://a", Settings: Settings{Tags: []string{"t"}}}))
	res := mustApply(t, mem, 2, EncodeUpdate(Update{Code: "x", User: "ALICE", Fields: FieldURL | FieldStatus | FieldDisabled, URL: "https://b", Settings: Settings{Status: 301}, Disabled: true}))
	if r, err := decodeRecordResult(res); err != nil || r.url != "https://b" || r.status != 301 || !r.disabled || !reflect.DeepEqual(r.tags, []string{"t"}) {
		t.Fatalf("update = %+v, %v", r, err)
	}
	before := mem.Len()
	for _, tc := range []struct {
		u    Update
		code errs.Code
	}{
		{Update{Code: "x", User: "bob", Fields: FieldURL, URL: "https://evil"}, errs.Forbidden},
		{Update{Code: "y", User: "alice", Fields: FieldURL, URL: "https://c"}, errs.NotFound},
	} {
		_, err := decodeRecordResult(mustApply(t, mem, 3, EncodeUpdate(tc.u)))
		if errs.CodeOf(err) != tc.code {
			t.Errorf("update %+v: %v, want %s", tc.u, err, tc.code)
		}
	}
	if l, _, _ := Get(mem, "x"); l.URL != "https://b" || mem.Len() != before {
		t.Fatalf("a refused update changed the link: %+v", l)
	}
}

func TestStateMachine_AddVisits(t *testing.T) {
	mem := state.NewMem()
	mustApply(t, mem, 1, EncodeCreate(Create{Code: "x", CreatedBy: "alice", URL: "https://a"}))
	// More referrer hosts than a link keeps: the rest count as "(other)".
	refs := make([]Count, 0, MaxReferrers+5)
	for i := range MaxReferrers + 5 {
		refs = append(refs, Count{Name: fmt.Sprintf("r%03d.example", i), N: 1})
	}
	visits := AddVisits{Links: []LinkVisits{
		{Code: "gone", Days: []DayVisits{{Day: 10, Humans: 1}}},
		{Code: "x", Days: []DayVisits{{Day: 10, Humans: 105, Bots: 3}, {Day: 11, Humans: 2}},
			Referrers: refs, Browsers: []Count{{BrowserChrome, 107}}, Systems: []Count{{SystemLinux, 107}}},
	}}
	if n, err := decodeHitsResult(mustApply(t, mem, 2, EncodeAddVisits(visits))); err != nil || n != 1 {
		t.Fatalf("AddVisits updated %d, %v", n, err)
	}
	r, _ := decodeRecord(mustGet(t, mem, linkKey("x")))
	st, err := readStats(mem, "x", r, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if st.Visits != 110 || st.Bots != 3 || len(st.Days) != 2 || st.Days[0] != (DayVisits{10, 105, 3}) || len(st.Referrers) != MaxReferrers+1 {
		t.Fatalf("stats = %+v", st)
	}
	if st.Referrers[0] != (Count{OtherReferrers, 5}) || st.Direct != 2 {
		t.Fatalf("top referrer %+v, direct %d", st.Referrers[0], st.Direct)
	}
	if st2, _ := readStats(mem, "x", r, 11, 11); len(st2.Days) != 1 || st2.Days[0].Day != 11 {
		t.Fatalf("window [11,11] = %+v", st2.Days)
	}
	// Deleting the link deletes its counters; a new link of the same code
	// starts from nothing.
	mustApply(t, mem, 3, EncodeDelete(Delete{Code: "x", User: "alice"}))
	if mem.Len() != 0 {
		t.Fatalf("%d keys left after delete", mem.Len())
	}
}

func mustGet(t *testing.T, r state.Reader, k []byte) []byte {
	t.Helper()
	v, ok, err := r.Get(k)
	if err != nil || !ok {
		t.Fatalf("get %q: %v, %v", k, ok, err)
	}
	return v
}

func TestClassify(t *testing.T) {
	memo := newAgentMemo()
	for _, tc := range []struct {
		ua, ref string
		want    visitor
	}{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "https://WWW.Example.COM.:8443/path?q",
			visitor{"www.example.com", BrowserEdge, SystemWindows, false}},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/120.0 Mobile/15E148 Safari/604.1", "",
			visitor{"", BrowserChrome, SystemIOS, false}},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Safari/605.1.15", "http://user:pw@[::1]:80/",
			visitor{"[::1]", BrowserSafari, SystemMacOS, false}},
		{"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/23.0 Chrome/115.0 Mobile Safari/537.36", "android-app://com.x",
			visitor{OtherReferrers, BrowserSamsung, SystemAndroid, false}},
		{"Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36 OPR/99.0", "",
			visitor{"", BrowserOpera, SystemChromeOS, false}},
		{"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "", visitor{"", FamilyOther, FamilyOther, true}},
		{"curl/8.5.0", "", visitor{"", FamilyOther, FamilyOther, true}},
		{"", "https://x.example/<script>", visitor{"x.example", FamilyOther, FamilyOther, true}},
		{"Mozilla/5.0", "https://ex ample.com/", visitor{OtherReferrers, FamilyOther, FamilyOther, false}},
		{strings.Repeat("x", maxUA) + "bot", "", visitor{"", FamilyOther, FamilyOther, false}}, // past what is read
	} {
		if got := classify(Visit{UserAgent: tc.ua, Referer: tc.ref}); got != tc.want {
			t.Errorf("classify(%.40q, %q) = %+v, want %+v", tc.ua, tc.ref, got, tc.want)
		}
		for range 2 { // a miss, then a hit
			if got := memo.classify(Visit{UserAgent: tc.ua, Referer: tc.ref}); got != tc.want {
				t.Errorf("agentMemo.classify(%.40q, %q) = %+v, want %+v", tc.ua, tc.ref, got, tc.want)
			}
		}
	}
}

// TestAgentMemo_Slots: User-Agents sharing a slot replace each other, and
// each is still classified as itself.
func TestAgentMemo_Slots(t *testing.T) {
	memo := newAgentMemo()
	for i := range 4 * agentSlots {
		ua, want := fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0) Firefox/%d", i), visitor{"", BrowserFirefox, SystemWindows, false}
		if i%2 == 1 {
			ua, want = fmt.Sprintf("SomeCrawler/%d", i), visitor{"", BrowserChrome, SystemLinux, true}
			ua += " (Linux) Chrome/1 crawl"
		}
		if got := memo.classify(Visit{UserAgent: ua}); got != want {
			t.Fatalf("classify(%q) = %+v, want %+v", ua, got, want)
		}
	}
}

func TestCheckLoop(t *testing.T) {
	self := []string{"https://par.ly", "10.0.0.3:7070", "localhost:7071"}
	for _, tc := range []struct {
		url  string
		loop bool
	}{
		{"https://par.ly/s/x", true},
		{"http://PAR.LY.:81//S/./x", true},
		{"https://par.ly/%2573", false}, // decodes to %73, not s
		{"https://par.ly/docs", false},
		{"http://10.0.0.3:7070/s/x", true},
		{"http://10.0.0.3:7072/s/x", false},
		{"http://127.0.0.1:7071/s/x", true},
		{"http://0177.0.0.1:7071/s/x", true},
		{"http://[::]:7071/s/x", true},
		{"http://sub.localhost:7071/s/x", true},
		{"http://127.0.0.1:7072/s/x", false},
		{"https://par.ly.evil.example/s/x", false},
	} {
		err := checkLoop(tc.url, self, nil)
		if (err != nil) != tc.loop {
			t.Errorf("checkLoop(%q) = %v, want loop %v", tc.url, err, tc.loop)
		}
	}
}

// TestCheckLoop_ShortDomain: on a short domain every path is a short link.
func TestCheckLoop_ShortDomain(t *testing.T) {
	for _, tc := range []struct {
		root, url string
		loop      bool
	}{
		{"https://s.example", "https://s.example/abc", true},
		{"https://s.example", "http://S.EXAMPLE.:8080/", true},
		{"https://s.example", "https://s.example/docs/page?x=1", true},
		{"https://s.example", "https://www.s.example/abc", false},
		{"https://s.example", "https://par.ly/abc", false},
		{"http://localhost:8081", "http://127.0.0.1:8081/abc", true},
		{"http://localhost:8081", "http://127.0.0.1:8082/abc", false},
	} {
		err := checkLoop(tc.url, nil, []string{tc.root})
		if (err != nil) != tc.loop {
			t.Errorf("root %s: checkLoop(%q) = %v, want loop %v", tc.root, tc.url, err, tc.loop)
		}
		if err != nil && !strings.Contains(err.Error(), "serves this cluster's short links at every path") {
			t.Errorf("root %s: checkLoop(%q) = %v", tc.root, tc.url, err)
		}
	}
}

// TestCheckLoop_LinksListeners: a node's links listener (--links) serves
// a code at every path, so any URL on its host and port loops, named in
// the error; the same host on another port does not, and /s/ on the
// members' HTTP addresses still does.
func TestCheckLoop_LinksListeners(t *testing.T) {
	self := []string{"https://par.ly", "10.0.0.3:7070"}
	roots := []string{"10.0.0.3:8080", "localhost:8081", "[::1]:8082"}
	for _, tc := range []struct {
		url  string
		loop bool
	}{
		{"http://10.0.0.3:8080/abc", true},
		{"https://10.0.0.3:8080/docs/page?x=1", true},
		{"http://10.0.0.3:8080/", true},
		{"http://10.0.0.3:8080", true},
		{"http://10.0.0.3:8080/s/abc", true},
		{"http://10.0.0.3:8081/abc", false},
		{"http://10.0.0.3:7070/abc", false},
		{"http://10.0.0.3:7070/s/abc", true},
		{"http://10.0.0.4:8080/abc", false},
		{"http://127.0.0.1:8081/abc", true},
		{"http://LOCALHOST:8081/abc", true},
		{"http://[::1]:8081/x", true},
		{"http://2130706433:8081/x", true},
		{"http://0.0.0.0:8081/x", true},
		{"http://127.0.0.1:8082/abc", true},
		{"http://localhost:8082/abc", true},
		{"http://127.0.0.1:8083/abc", false},
		{"http://localhost/abc", false},
		{"http://example.org/abc", false},
	} {
		err := checkLoop(tc.url, self, roots)
		if (err != nil) != tc.loop {
			t.Errorf("checkLoop(%q) = %v, want loop %v", tc.url, err, tc.loop)
		}
		if err == nil || strings.Contains(tc.url, ":7070") {
			continue
		}
		u, _ := url.Parse(tc.url)
		if msg := err.Error(); !strings.Contains(msg, u.Host) || !strings.Contains(msg, "links listener") || !strings.Contains(msg, "would loop") {
			t.Errorf("checkLoop(%q) = %v, want it to name %s, a links listener and the loop", tc.url, err, u.Host)
		}
		if !errs.Is(err, errs.Invalid) {
			t.Errorf("checkLoop(%q) = %v, want errs.Invalid", tc.url, err)
		}
	}
}

// TestVisitCounter_Bounded: past maxKeys counters, visits still count, but
// without their referrer, browser and OS.
func TestVisitCounter_Bounded(t *testing.T) {
	c := newVisitCounter(10)
	for i := range 100 {
		c.count("x", visitor{referrer: fmt.Sprintf("r%d.example", i), browser: BrowserChrome, system: SystemLinux}, 1, 0)
	}
	p := c.take()
	var total uint64
	for _, n := range p {
		total += n
	}
	if len(p) > 11 || total != 100 {
		t.Fatalf("%d counters holding %d visits", len(p), total)
	}
	if c.take() != nil {
		t.Fatal("take after take is not empty")
	}
}

func TestOptions_Settings(t *testing.T) {
	now := time.Unix(1000, 0)
	for _, o := range []Options{
		{ExpiresAt: now}, {Status: 200}, {Tags: []string{""}}, {Tags: []string{"a\u202eb"}},
	} {
		if _, err := o.settings(now); !errs.Is(err, errs.Invalid) {
			t.Errorf("settings(%+v) = %v, want invalid", o, err)
		}
	}
	s, err := Options{ExpiresAt: now.Add(time.Second), Status: 307, Tags: []string{"B", "a", "b"}}.settings(now)
	if err != nil || s.ExpiresMs != 1_001_000 || s.Status != 307 || !reflect.DeepEqual(s.Tags, []string{"a", "b"}) {
		t.Fatalf("settings = %+v, %v", s, err)
	}
}

func BenchmarkClassify(b *testing.B) {
	v := Visit{
		UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		Referer:   "https://news.example.org/item?id=42",
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = classify(v)
	}
}
