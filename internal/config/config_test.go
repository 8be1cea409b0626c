package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestValidate_PprofOnlyOnLoopback: profiles have no authentication, so a
// node refuses to serve them anywhere but on loopback.
func TestValidate_PprofOnlyOnLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		":6060": true, "127.0.0.1:6060": true, "localhost:6060": true, "[::1]:6060": true,
		"0.0.0.0:6060": false, "10.0.0.5:6060": false, "[::]:6060": false, "example.org:6060": false, "6060": false,
	} {
		checkValidate(t, ok, func(c *Config) { c.PprofAddr = addr }, "pprof "+addr, "pprof")
	}
}

// checkValidate validates the default configuration changed by edit: it
// must pass when ok, and otherwise fail with an error naming every one of
// mentions. what names the case in failures.
func checkValidate(t *testing.T, ok bool, edit func(*Config), what string, mentions ...string) {
	t.Helper()
	c := Default()
	edit(&c)
	err := c.Validate()
	if ok && err != nil {
		t.Errorf("%s refused: %v", what, err)
	}
	if ok {
		return
	}
	if err == nil {
		t.Errorf("%s accepted", what)
		return
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s refused with %q, which does not say %q", what, err, m)
		}
	}
}

// TestValidate_LinksAddress: the links listener is off when empty and
// otherwise needs a host:port, named in the error.
func TestValidate_LinksAddress(t *testing.T) {
	for addr, ok := range map[string]bool{"": true, ":8081": true, "0.0.0.0:8081": true, "8081": false, "example.org": false} {
		checkValidate(t, ok, func(c *Config) { c.LinksAddr = addr }, "links "+addr, "links", "host:port")
	}
}

func TestValidate_BaseURLs(t *testing.T) {
	for _, tc := range []struct {
		raw           string
		public, links bool // accepted as --public-url, as --links-url
		wantInRefusal string
	}{
		{"", true, true, ""},
		{"https://par.ly", true, true, ""},
		{"https://par.ly/", true, true, ""},
		{"http://s.example:8081", true, true, ""},
		{"https://example.com/parley", true, false, "no path"},
		{"par.ly", false, false, "http:// or https://"},
		{"javascript:alert(1)", false, false, "http:// or https://"},
		{"ftp://par.ly", false, false, "http:// or https://"},
		{"https://", false, false, "no host"},
		{"https://bob:secret@par.ly", false, false, "user name"},
		{"https://par.ly/?x=1", false, false, "query"},
		{"https://par.ly/#top", false, false, "fragment"},
	} {
		for _, flag := range []string{"public-url", "links-url"} {
			c := Default()
			ok := tc.public
			if flag == "public-url" {
				c.PublicURL = tc.raw
			} else {
				c.LinksURL, ok = tc.raw, tc.links
			}
			err := c.Validate()
			if ok && err != nil {
				t.Errorf("--%s %q refused: %v", flag, tc.raw, err)
			}
			if !ok && (err == nil || !strings.Contains(err.Error(), flag+" ") || !strings.Contains(err.Error(), tc.wantInRefusal)) {
				t.Errorf("--%s %q: error %v, want one naming the flag and %q", flag, tc.raw, err, tc.wantInRefusal)
			}
		}
	}
}

// TestValidate_RoundPause: 0 turns the pause off; a negative one, or one
// long enough to stall the Raft loop, is refused by name.
func TestValidate_RoundPause(t *testing.T) {
	for d, ok := range map[time.Duration]bool{
		0: true, 150 * time.Microsecond: true, 10 * time.Millisecond: true,
		-time.Microsecond: false, 11 * time.Millisecond: false, time.Second: false,
	} {
		checkValidate(t, ok, func(c *Config) { c.RoundPause = d }, "round-pause "+d.String(), "round-pause")
	}
}

func TestValidate_ConnLimits(t *testing.T) {
	// -1 turns the per-address cap off, as on --limit-conns; 0 does too
	// (what it always meant there).
	for n, ok := range map[int]bool{0: true, 1: true, 1024: true, -1: true, -2: false} {
		checkValidate(t, ok, func(c *Config) { c.ConnsPerAddress = n }, fmt.Sprintf("limit-conns-per-address %d", n), "limit-conns-per-address")
	}
	// -1 turns the total cap off (0 is the automatic one).
	for n, ok := range map[int]bool{0: true, 1: true, 1024: true, -1: true, -2: false} {
		checkValidate(t, ok, func(c *Config) { c.MaxConns = n }, fmt.Sprintf("limit-conns %d", n), "limit-conns")
	}
}

func TestValidate_RebuildQuarantinedNeedsJoin(t *testing.T) {
	checkValidate(t, false, func(c *Config) { c.RebuildQuarantined = true }, "rebuild-quarantined without join", "rebuild-quarantined", "--join")
	checkValidate(t, true, func(c *Config) { c.RebuildQuarantined, c.Join = true, []string{"n1:7071"} }, "rebuild-quarantined with join")
}
