package cli

import (
	"context"
	"encoding/json"
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
	if !regexp.MustCompile(`(?m)^docs\s+\d+\s+\S+\s+https://example.org/docs$`).MatchString(list) || !strings.Contains(list, picked.Code) {
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
}
