package queue

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps queue a domain package: standard library, internal/state
// and internal/errs only (house rule 2); queuetest may add queue itself.
func TestImports(t *testing.T) {
	const mod = "github.com/parley-chat/parley/internal/"
	for dir, extra := range map[string]string{".": "", "queuetest": mod + "queue"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		allowed := map[string]bool{mod + "state": true, mod + "errs": true, extra: extra != ""}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			path := filepath.Join(dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				std := !strings.Contains(strings.SplitN(p, "/", 2)[0], ".")
				if p == "net/http" || (!std && !allowed[p]) {
					t.Errorf("%s imports %s", path, p)
				}
			}
		}
	}
}
