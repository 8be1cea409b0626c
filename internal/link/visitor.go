package link

import (
	"bytes"
	"hash/maphash"
	"strings"
	"sync/atomic"
)

// Visit is what a redirect request says about its visitor: its User-Agent
// and Referer headers. Only the families and the referrer's host name
// derived from them are counted; the headers themselves, and the visitor's
// address, are never stored.
type Visit struct {
	UserAgent string
	Referer   string
}

// Browser and OS families of visits (Stats.Browsers, Stats.Systems).
const (
	FamilyOther = "Other"

	BrowserChrome  = "Chrome"
	BrowserEdge    = "Edge"
	BrowserFirefox = "Firefox"
	BrowserIE      = "Internet Explorer"
	BrowserOpera   = "Opera"
	BrowserSafari  = "Safari"
	BrowserSamsung = "Samsung Internet"

	SystemAndroid  = "Android"
	SystemChromeOS = "ChromeOS"
	SystemIOS      = "iOS"
	SystemLinux    = "Linux"
	SystemMacOS    = "macOS"
	SystemWindows  = "Windows"
)

// visitor is a visit classified: what is counted of it.
type visitor struct {
	referrer string // host name, lower case; "" for direct visits
	browser  string
	system   string
	bot      bool
}

// botMarks are lower-case User-Agent fragments of crawlers, link
// previewers, monitors and HTTP libraries.
var botMarks = marks("bot", "crawl", "spider", "slurp", "preview", "facebookexternalhit", "headless", "lighthouse",
	"monitor", "pingdom", "curl/", "wget/", "python", "go-http-client", "java/", "okhttp", "httpclient",
	"libwww", "scrapy", "axios/", "node-fetch", "httpie", "parley/")

// browserMarks and systemMarks map lower-case User-Agent fragments to
// families, most specific first (Edge and Opera say "Chrome" too, iPhones
// say "Mac OS X").
var (
	browserMarks = families(
		"edg/", BrowserEdge, "edge/", BrowserEdge, "opr/", BrowserOpera, "opera", BrowserOpera,
		"samsungbrowser", BrowserSamsung, "firefox/", BrowserFirefox, "fxios", BrowserFirefox,
		"chrome/", BrowserChrome, "crios/", BrowserChrome, "chromium", BrowserChrome,
		"safari/", BrowserSafari, "msie ", BrowserIE, "trident/", BrowserIE)
	systemMarks = families(
		"windows", SystemWindows, "iphone", SystemIOS, "ipad", SystemIOS, "ipod", SystemIOS,
		"android", SystemAndroid, "cros ", SystemChromeOS, "mac os x", SystemMacOS, "macintosh", SystemMacOS,
		"linux", SystemLinux)
)

func marks(list ...string) [][]byte {
	out := make([][]byte, len(list))
	for i, m := range list {
		out[i] = []byte(m)
	}
	return out
}

// family is a User-Agent fragment and the family it names.
type family struct {
	mark []byte
	name string
}

func families(pairs ...string) []family {
	out := make([]family, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, family{[]byte(pairs[i]), pairs[i+1]})
	}
	return out
}

// maxUA is how much of a User-Agent is read: every family and bot mark
// appears well within it.
const maxUA = 256

// classify derives what is counted of a visit. An empty User-Agent is a
// bot.
func classify(v Visit) visitor {
	a := classifyAgent(v.UserAgent)
	return visitor{referrer: referrerHost(v.Referer), browser: a.browser, system: a.system, bot: a.bot}
}

// agent is what a User-Agent says of a visitor.
type agent struct {
	browser, system string
	bot             bool
}

// classifyAgent classifies a User-Agent: one lower-cased copy on the stack,
// searched with bytes.Contains, no allocation.
func classifyAgent(userAgent string) agent {
	var buf [maxUA]byte
	ua := buf[:copy(buf[:], userAgent)]
	for i, c := range ua {
		ua[i] = lowerByte(c)
	}
	out := agent{bot: len(ua) == 0}
	for _, m := range botMarks {
		if out.bot {
			break
		}
		out.bot = bytes.Contains(ua, m)
	}
	out.browser = firstFamily(ua, browserMarks)
	out.system = firstFamily(ua, systemMarks)
	return out
}

// agentSlots is how many User-Agents an agentMemo remembers.
const agentSlots = 1024

// agentMemo remembers the classification of the User-Agents seen lately,
// each in a slot chosen by its hash, replaced by the next one of that slot:
// a redirect's visitor is classified once per browser build, not per
// visit. A slot holds an immutable entry behind an atomic pointer, so
// reading takes no lock; a new User-Agent costs one entry (at most maxUA
// bytes of it are kept, all classifyAgent reads).
type agentMemo struct {
	seed  maphash.Seed
	slots [agentSlots]atomic.Pointer[agentEntry]
}

type agentEntry struct {
	ua string
	agent
}

func newAgentMemo() *agentMemo { return &agentMemo{seed: maphash.MakeSeed()} }

// classify is the package's classify, with the User-Agent's part
// remembered.
func (m *agentMemo) classify(v Visit) visitor {
	ua := v.UserAgent[:min(len(v.UserAgent), maxUA)]
	slot := &m.slots[maphash.String(m.seed, ua)%agentSlots]
	e := slot.Load()
	if e == nil || e.ua != ua {
		e = &agentEntry{ua: strings.Clone(ua), agent: classifyAgent(ua)}
		slot.Store(e)
	}
	return visitor{referrer: referrerHost(v.Referer), browser: e.browser, system: e.system, bot: e.bot}
}

// firstFamily returns the family of the first mark ua (lower case)
// contains, or FamilyOther.
func firstFamily(ua []byte, list []family) string {
	for _, f := range list {
		if bytes.Contains(ua, f.mark) {
			return f.name
		}
	}
	return FamilyOther
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// maxHost is the longest host name (DNS's limit).
const maxHost = 253

// referrerHost returns the host name of an http(s) Referer in lower case,
// without port, user or trailing dot: "" when there is none, and
// OtherReferrers when it is not an http(s) URL with a plausible host.
func referrerHost(ref string) string {
	if ref == "" {
		return ""
	}
	rest, ok := cutPrefixFold(ref, "https://")
	if !ok {
		if rest, ok = cutPrefixFold(ref, "http://"); !ok {
			return OtherReferrers
		}
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	host := rest
	if strings.HasPrefix(host, "[") {
		end := strings.IndexByte(host, ']')
		if end < 0 {
			return OtherReferrers
		}
		host = host[:end+1]
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.TrimSuffix(host, ".")
	if host == "" || len(host) > maxHost {
		return OtherReferrers
	}
	for i := 0; i < len(host); i++ {
		c := lowerByte(host[i])
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == '[' || c == ']' || c == ':') {
			return OtherReferrers
		}
	}
	return strings.ToLower(host)
}

func cutPrefixFold(s, lowerPrefix string) (string, bool) {
	if len(s) < len(lowerPrefix) {
		return s, false
	}
	for i := 0; i < len(lowerPrefix); i++ {
		if lowerByte(s[i]) != lowerPrefix[i] {
			return s, false
		}
	}
	return s[len(lowerPrefix):], true
}
