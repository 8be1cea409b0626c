package archtest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docLink finds Markdown links and backquoted paths to Markdown files.
var docLink = regexp.MustCompile("\\]\\(([^)#\\s]+)[^)]*\\)|`([^`\\s]*\\.md)`")

// TestDocs_LinksStayInTheRepository keeps the documentation whole on a
// fresh clone: every link of README.md and docs/*.md to a file resolves to
// a file of the repository, and none points outside it (the contract once
// lived in ../shared, which a clone does not have).
func TestDocs_LinksStayInTheRepository(t *testing.T) {
	root := filepath.Join("..", "..")
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	absRoot, _ := filepath.Abs(root)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if m[2] != "" && !strings.Contains(target, "/") {
				continue // a bare file name in prose (`DESIGN.md`), not a path
			}
			abs, _ := filepath.Abs(filepath.Join(filepath.Dir(f), target))
			rel, err := filepath.Rel(absRoot, abs)
			switch {
			case err != nil || strings.HasPrefix(rel, ".."):
				t.Errorf("%s links %s, outside the repository", filepath.Base(f), target)
			case m[1] != "":
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s links %s, which does not exist", filepath.Base(f), target)
				}
			}
		}
	}
}
