package cli

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCLIDoc checks that docs/CLI.md has a section for every command of
// parley and parley-bench that runs, naming each of its flags.
func TestCLIDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	flagRE := regexp.MustCompile(`(?m)^  (--?[a-z][a-z0-9-]*)`)
	var walk func(c *command, path string, help func(args []string) string)
	walk = func(c *command, path string, help func(args []string) string) {
		for _, s := range c.subs {
			walk(s, path+" "+s.name, help)
		}
		if c.subs != nil {
			return
		}
		head := "## " + path + "\n"
		i := strings.Index(doc, head)
		if i < 0 {
			t.Errorf("docs/CLI.md has no section %q", strings.TrimSpace(head))
			return
		}
		section := doc[i+len(head):]
		if j := strings.Index(section, "\n## "); j >= 0 {
			section = section[:j]
		}
		for _, m := range flagRE.FindAllStringSubmatch(help(append(strings.Fields(path)[1:], "-h")), -1) {
			if !strings.Contains(section, "  "+m[1]+" ") && !strings.Contains(section, "  "+m[1]+"\n") {
				t.Errorf("docs/CLI.md section %q lacks %s", path, m[1])
			}
		}
	}
	walk(rootCommand(), "parley", func(args []string) string {
		return run(context.Background(), nil, "", args...).stdout
	})
	walk(peerCommand(Peers{}), "parley-bench", func(args []string) string {
		return runPeers(Peers{}, args...).stdout
	})
}
