// Package archtest holds tests of the repository's architecture: which
// packages may depend on which (house rule 2: dependencies point inward;
// domain packages never import Raft, Pebble, memberlist or net/http).
package archtest

import (
	"go/parser"
	"go/token"
	"iter"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/parley-chat/parley/"

// domainImports lists, for each package that must stay a pure domain
// package (internal/presence is the presence domain; its service,
// internal/presence/tracker, is a package of its own, see layers), the
// non-standard-library imports it may use. Every package here may also use
// the shared homes internal/state, internal/errs, internal/wire,
// internal/ident and internal/text (what every replica must compute alike,
// and the rule for user-chosen text, are declared once there), and no
// package here may use net/http or math/rand (Apply must be deterministic;
// randomness comes from the proposer).
var domainImports = map[string][]string{
	"internal/kv":                    {module + "internal/partkey"},
	"internal/account":               {module + "internal/password", module + "internal/ratelimit"},
	"internal/chat":                  {module + "internal/password"},
	"internal/password":              {"golang.org/x/crypto/argon2"}, // the one home of password hashing
	"internal/password/passwordtest": {module + "internal/password"},
	"internal/queue":                 nil,
	"internal/link":                  nil,
	"internal/presence":              nil,
	"internal/ratelimit":             nil,
	"internal/placement":             {module + "internal/partkey"},
	"internal/partkey":               nil, // where a key lives: shared with the Go client
	"internal/state":                 nil,
	"internal/errs":                  nil,
	"internal/wire":                  nil,
	"internal/audit":                 nil,
	"internal/pki":                   nil,                         // standard library crypto only
	"internal/text":                  nil,                         // standard library only, no Unicode tables
	"internal/qrcode":                {"github.com/piglig/go-qr"}, // the one home of the QR library
	"internal/compat":                nil,                         // versions: standard library only
	"internal/backup":                nil,                         // the backup file format: standard library only
}

// sharedHomes are the packages every domain package may import.
var sharedHomes = []string{"internal/state", "internal/errs", "internal/wire", "internal/ident", "internal/text", "internal/compat"}

// forbiddenStd are standard-library packages no domain package may import.
var forbiddenStd = map[string]bool{"net/http": true, "math/rand": true, "math/rand/v2": true}

func TestImports_DomainPackagesStayPure(t *testing.T) {
	for dir, extra := range domainImports {
		t.Run(dir, func(t *testing.T) {
			allowed := map[string]bool{}
			for _, shared := range sharedHomes {
				allowed[module+shared] = true
			}
			for _, p := range extra {
				allowed[p] = true
			}
			for file, path := range packageImports(t, dir) {
				std := !strings.Contains(strings.SplitN(path, "/", 2)[0], ".")
				if forbiddenStd[path] || (!std && !allowed[path]) {
					t.Errorf("%s imports %s", file, path)
				}
			}
		})
	}
}

// TestImports_EngineStaysDomainFree keeps the replication engine, storage
// and transport free of domain packages: they know commands only as bytes.
func TestImports_EngineStaysDomainFree(t *testing.T) {
	for _, dir := range []string{"internal/multiraft", "internal/storage", "internal/transport", "internal/membership"} {
		files, _ := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for d := range domainImports {
					if d != "internal/state" && d != "internal/errs" && d != "internal/compat" && path == module+d {
						t.Errorf("%s/%s imports the domain package %s", dir, filepath.Base(name), path)
					}
				}
				if path == module+"internal/api" || path == module+"internal/node" {
					t.Errorf("%s/%s imports %s", dir, filepath.Base(name), path)
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "internal", "multiraft")); err != nil {
		t.Fatal(err)
	}
}

// layers lists, for packages above the engine, the packages of this module
// each may not import: dependencies point inward, from the wiring root
// (node) to the request path (partition) to the engine, and the services
// beside the request path reach it only through the interfaces they declare.
var layers = map[string][]string{
	// The request path takes a Deps, never the node that wires it.
	"internal/partition": {"internal/node", "internal/api", "internal/cli", "internal/web", "internal/presence/tracker"},
	// The presence service proposes and reads through its Replicator (the
	// partition Router): no engine, store or transport of its own.
	"internal/presence/tracker": {"internal/node", "internal/partition", "internal/api", "internal/multiraft", "internal/storage", "internal/transport"},
	// Chat search reads replicas through the Reader, calls other nodes
	// through the Remote and learns of replicas through Config.Replicas,
	// all given by the node: no engine, store, transport or request path.
	"internal/search": {"internal/node", "internal/partition", "internal/api", "internal/cli", "internal/web", "internal/multiraft", "internal/storage", "internal/transport"},
	// Outgoing webhook delivery reads and records through the rooms
	// Service (its Source): no engine, store, transport or node.
	"internal/webhook": {"internal/node", "internal/partition", "internal/api", "internal/cli", "internal/multiraft", "internal/storage", "internal/transport"},
	// The node's clock is a leaf: the engine and the services take its Now.
	"internal/clock": {"internal/node", "internal/partition", "internal/multiraft", "internal/storage", "internal/transport", "internal/api"},
}

// TestImports_BleveOnlyInSearch keeps the search library in its one home,
// internal/search: domain packages and the rest of the product reach it
// through that package's types only.
func TestImports_BleveOnlyInSearch(t *testing.T) {
	importedOnlyBy(t, "github.com/blevesearch/", func(file string) bool {
		return path.Dir(file) == "internal/search"
	})
}

// TestImports_FasthttpOnlyForShortLinks keeps fasthttp to the links
// listener (--links): its handler in internal/api and its server in
// internal/node. Everything else the nodes serve is net/http.
func TestImports_FasthttpOnlyForShortLinks(t *testing.T) {
	importedOnlyBy(t, "github.com/valyala/", func(file string) bool {
		switch file {
		case "internal/api/redirects_fast.go", "internal/api/redirects_test.go", "internal/api/links_bench_test.go", "internal/node/links.go",
			"scripts/bench/redirectfloor/main.go": // the floor it is measured against
			return true
		}
		return false
	})
}

// importedOnlyBy fails for every Go file of the repository importing a
// package whose path starts with prefix, unless allowed(file) (the file's
// path from the repository root, with slashes).
func importedOnlyBy(t *testing.T, prefix string, allowed func(file string) bool) {
	t.Helper()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if allowed(filepath.ToSlash(rel)) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if ip, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(ip, prefix) {
				t.Errorf("%s imports %s: not allowed there", rel, ip)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestImports_Layers(t *testing.T) {
	for dir, forbidden := range layers {
		t.Run(dir, func(t *testing.T) {
			for file, path := range packageImports(t, dir) {
				for _, bad := range forbidden {
					if path == module+bad {
						t.Errorf("%s imports %s", file, path)
					}
				}
			}
		})
	}
}

// testHelpers are packages for tests only: in-memory replicators, cheap
// password hashing, the polling helper, the full service stack, the
// in-process test clusters and their fault tests, the KV linearizability model, the
// fault-injection harness, its fault-injecting file system, its workloads and the renderer of their results,
// and the checker of API answers against the OpenAPI document.
var testHelpers = []string{"internal/state/statetest", "internal/password/passwordtest", "internal/poll", "internal/servicetest",
	"internal/testcluster", "internal/testcluster/faults", "internal/linearizable", "internal/nemesis", "internal/jepsen",
	"internal/nemesis/faultfs", "internal/nemesis/faultfs/cmd/parley-faultfs", "scripts/reliability", "internal/api/openapi/openapitest"}

// TestImports_TestHelpersStayInTests keeps the test helpers out of the
// product: only _test.go files and other helpers import them.
func TestImports_TestHelpersStayInTests(t *testing.T) {
	helper := map[string]bool{}
	for _, h := range testHelpers {
		helper[module+h] = true
	}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if helper[module+filepath.ToSlash(dir)] {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); helper[p] {
				t.Errorf("%s imports the test helper %s", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// packageImports yields every import of the non-test Go files of dir (from
// the repository root), with the file's name; a directory without Go files
// fails the test.
func packageImports(t *testing.T, dir string) iter.Seq2[string, string] {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	return func(yield func(string, string) bool) {
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !yield(filepath.Base(name), path) {
					return
				}
			}
		}
	}
}

// TestImports_ClientStaysLight keeps the Go client a library others can
// import: of this module it uses only internal/partkey (where a key lives,
// to route requests), never the server's packages and their dependencies.
func TestImports_ClientStaysLight(t *testing.T) {
	for file, path := range packageImports(t, "client") {
		if strings.HasPrefix(path, module) && path != module+"internal/partkey" {
			t.Errorf("client/%s imports %s", file, path)
		}
	}
}
