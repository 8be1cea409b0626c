package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

func TestLinkCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	url, _ := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := cliAs{t, ctx, url, signUpAs(t, url, "alice")}
	bob := cliAs{t, ctx, url, signUpAs(t, url, "bob")}

	if got := alice.ok("link", "create", "https://example.org/docs", "--code", "docs"); !strings.HasSuffix(got, "/s/docs\n") {
		t.Errorf("create printed %q, want the short URL", got)
	}
	alice.fails("conflict", "link", "create", "https://example.org/other", "--code", "docs")
	alice.fails("invalid", "link", "create", "ftp://example.org/file")
	var picked client.Link
	if err := json.Unmarshal([]byte(alice.ok("link", "create", "https://example.org/picked", "--json")), &picked); err != nil || picked.Code == "" {
		t.Errorf("create --json = %+v (%v)", picked, err)
	}
	if loc, err := client.New(url).Resolve(ctx, "docs"); err != nil || loc != "https://example.org/docs" {
		t.Errorf("GET /s/docs = %q, %v", loc, err)
	}

	info := bob.ok("link", "info", "docs")
	for _, re := range []string{`(?m)^url:\s+https://example.org/docs$`, `(?m)^created by:\s+alice$`, `(?m)^hits:\s+\d+$`} {
		if !regexp.MustCompile(re).MatchString(info) {
			t.Errorf("info lacks %s:\n%s", re, info)
		}
	}
	list := alice.ok("link", "list")
	if !regexp.MustCompile(`(?m)^docs\s+\d+\s+\S+\s+https://example.org/docs\s+active\s*$`).MatchString(list) || !strings.Contains(list, picked.Code) {
		t.Errorf("list:\n%s", list)
	}
	if strings.Contains(bob.ok("link", "list"), "docs") {
		t.Error("bob's list shows alice's link")
	}
	bob.fails("forbidden", "link", "delete", "docs")
	if got := alice.ok("link", "delete", "docs"); got != "deleted link docs\n" {
		t.Errorf("delete printed %q", got)
	}
	alice.fails("not_found", "link", "info", "docs")

	t.Run("lifecycle", func(t *testing.T) {
		alice.ok("link", "create", "https://example.org/life", "--code", "life", "--tags", "Docs,q1", "--max-visits", "100", "--status", "301", "--expires", "7d")
		info := alice.ok("link", "info", "life")
		for _, re := range []string{`(?m)^state:\s+active$`, `(?m)^max visits:\s+100$`, `(?m)^redirect:\s+301$`, `(?m)^tags:\s+docs, q1$`, `(?m)^expires at:\s+\S+$`} {
			if !regexp.MustCompile(re).MatchString(info) {
				t.Errorf("info lacks %s:\n%s", re, info)
			}
		}
		alice.fails("invalid", "link", "create", "https://example.org/x", "--status", "303")
		if r := alice.run("", "link", "create", "https://example.org/x", "--expires", "soon"); r.code != 2 || !strings.Contains(r.stderr, "--expires") {
			t.Errorf("a bad --expires: exit %d, stderr %q", r.code, r.stderr)
		}
		edited := alice.ok("link", "edit", "life", "--url", "https://example.org/moved", "--expires", "never", "--tags", "")
		if !strings.Contains(edited, "https://example.org/moved") || strings.Contains(edited, "expires at") || strings.Contains(edited, "tags:") {
			t.Errorf("edit printed:\n%s", edited)
		}
		bob.fails("forbidden", "link", "edit", "life", "--status", "302")
		alice.fails("invalid", "link", "edit", "life")
		if got := alice.ok("link", "disable", "life"); got != "disabled link life\n" {
			t.Errorf("disable printed %q", got)
		}
		if _, err := client.New(url).Resolve(ctx, "life"); err == nil || !strings.Contains(err.Error(), "410") {
			t.Errorf("resolve of a disabled link: %v", err)
		}
		if got := alice.ok("link", "list", "--state", "disabled"); !strings.Contains(got, "life") || strings.Contains(got, picked.Code) {
			t.Errorf("list --state disabled:\n%s", got)
		}
		alice.ok("link", "enable", "life")
		if loc, err := client.New(url).Resolve(ctx, "life"); err != nil || loc != "https://example.org/moved" {
			t.Errorf("resolve after enable = %q, %v", loc, err)
		}
		stats := alice.ok("link", "stats", "life")
		if !regexp.MustCompile(`(?m)^visits:\s+\d+ \(\d+ bots, \d+ direct\)$`).MatchString(stats) {
			t.Errorf("stats:\n%s", stats)
		}
		bob.fails("forbidden", "link", "stats", "life")
	})
	t.Run("qr and import", func(t *testing.T) {
		dir := t.TempDir()
		out := dir + "/life.png"
		if got := alice.ok("link", "qr", "life", "--out", out); !strings.HasPrefix(got, "wrote ") {
			t.Errorf("qr printed %q", got)
		}
		if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("qr file: %.8q, %v", b, err)
		}
		alice.fails("invalid", "link", "qr", "life", "--format", "gif", "--out", out)
		csv := dir + "/links.csv"
		if err := os.WriteFile(csv, []byte("https://example.org/i1,imp-1\nftp://example.org/i2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := alice.run("", "link", "import", csv)
		got := r.stdout
		if r.code != 1 || !strings.Contains(r.stderr, "1 of 2 lines failed") {
			t.Errorf("import: exit %d, stderr %q", r.code, r.stderr)
		}
		if !regexp.MustCompile(`(?m)^1\s+\S+/s/imp-1 -> https://example.org/i1$`).MatchString(got) ||
			!regexp.MustCompile(`(?m)^2\s+invalid: url`).MatchString(got) || !strings.Contains(got, "1 created, 1 failed") {
			t.Errorf("import printed:\n%s", got)
		}
	})
}
