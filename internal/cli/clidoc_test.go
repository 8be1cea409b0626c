package cli

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCLIDoc checks that docs/CLI.md has a section for every command that
// runs, naming each of its flags.
func TestCLIDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	flagRE := regexp.MustCompile(`(?m)^  (--?[a-z][a-z0-9-]*)`)
	var walk func(c *command, path string)
	walk = func(c *command, path string) {
		for _, s := range c.subs {
			walk(s, path+" "+s.name)
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
		r := run(context.Background(), nil, "", append(strings.Fields(path)[1:], "-h")...)
		for _, m := range flagRE.FindAllStringSubmatch(r.stdout, -1) {
			if !strings.Contains(section, "  "+m[1]+" ") && !strings.Contains(section, "  "+m[1]+"\n") {
				t.Errorf("docs/CLI.md section %q lacks %s", path, m[1])
			}
		}
	}
	walk(rootCommand(), "parley")
}
