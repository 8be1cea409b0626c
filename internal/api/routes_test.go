package api

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/presence"
	"github.com/parley-chat/parley/internal/state/statetest"
	"github.com/parley-chat/parley/internal/stream"
)

// opsStatus is a fakeStatus that also serves the operator endpoints, so
// that the server registers them.
type opsStatus struct{ fakeStatus }

// The reports have empty lists, not null ones, as a node's do.
func (*opsStatus) Verify(context.Context) (*VerifyReport, error) {
	return &VerifyReport{Partitions: []PartitionCheck{}}, nil
}
func (*opsStatus) ClusterLag(context.Context) (*LagReport, error) {
	return &LagReport{Replicas: []ReplicaLag{}, Unreachable: []string{}}, nil
}
func (*opsStatus) ClusterStats(context.Context) (*StatsReport, error) {
	return &StatsReport{Nodes: []NodeStats{}}, nil
}

// matrixEnv is a server with every optional service wired, so that its
// route table holds every route a node serves.
type matrixEnv struct {
	*fullEnv
	admin  *recordingAdmin
	tokens *memTokens
}

func newMatrixEnv(t *testing.T) *matrixEnv {
	t.Helper()
	m := &matrixEnv{admin: &recordingAdmin{}, tokens: &memTokens{}}
	ts := newTestStreams(t, stream.Config{})
	log := audit.NewLog("n1", slog.New(slog.DiscardHandler))
	m.fullEnv = newFullEnv(t, envOptions{cfg: Config{
		Status: &opsStatus{fakeStatus{ready: true}},
		Admin:  m.admin,
		Tokens: m.tokens,
		Audit:  log, AuditSource: localAudit{log},
		Presence: &leaseStore{rep: statetest.NewReplicator(4, presence.StateMachine{})},
		Streams:  ts,
	}})
	ts.rep = m.RoomRep
	return m
}

// wildcard matches a path wildcard of a net/http pattern.
var wildcard = regexp.MustCompile(`\{([a-z]+)(\.\.\.)?\}`)

// sample turns a route pattern into a request method and target: the
// pattern's method (GET for a bare path) and its path with every wildcard
// filled in.
func sample(pattern string) (method, target string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		// A catch-all: a method no route of that path has.
		method, path = http.MethodPatch, pattern
	}
	path = wildcard.ReplaceAllStringFunc(path, func(w string) string {
		if strings.HasSuffix(w, "...}") {
			return "some/key"
		}
		return "x"
	})
	return method, path
}

// registeredPatterns reads the package's source and returns the pattern of
// every route registration (handle, handleAuth, handleAdmin and addRoute
// called with a literal pattern), so that the matrix notices a route the
// matrix server failed to register.
func registeredPatterns(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains([]string{"handle", "handleAuth", "handleAdmin", "addRoute"}, sel.Sel.Name) {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				p, _ := strconv.Unquote(lit.Value)
				out = append(out, p)
			}
			return true
		})
	}
	return out
}

// adminByRule says whether a route must be admin-only whatever the table
// says: anything that changes the cluster, its join tokens, and the audit
// log.
func adminByRule(pattern string) bool {
	method, path := sample(pattern)
	return strings.HasPrefix(path, "/api/v1/cluster/") && (method != http.MethodGet || strings.HasPrefix(path, "/api/v1/cluster/tokens")) ||
		path == "/api/v1/audit"
}

// The permission matrix, generated from the route table: every route that
// needs a token refuses every bad token with 401, every admin route refuses
// a signed-in user with 403, no public route asks for a token, and no
// refused request changes anything.
func TestRoutes_PermissionMatrix(t *testing.T) {
	e := newMatrixEnv(t)
	routes := e.srv.Routes()
	var got []string
	for _, r := range routes {
		got = append(got, r.Pattern)
	}
	want := registeredPatterns(t)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("the matrix server registered %q,\nthe source registers %q: wire every service in newMatrixEnv", got, want)
	}

	for _, r := range routes {
		if adminByRule(r.Pattern) && r.Access != AdminOnly {
			t.Errorf("%s is %v; changing the cluster, its tokens or reading the audit log is for admins", r.Pattern, r.Access)
		}
	}

	admin := e.signUp(t, "alice") // the first user: admin
	user := e.signUp(t, "bob")
	revoked := e.login(t, "bob")
	if w := e.call(t, revoked, http.MethodDelete, "/api/v1/sessions/current", ""); w.Code != http.StatusNoContent {
		t.Fatalf("logout = %d %s", w.Code, w.Body)
	}
	badTokens := []struct {
		name    string
		headers []string
	}{
		{"missing", nil},
		{"not bearer", []string{"Authorization", "Basic YWxpY2U6cHc="}},
		{"empty bearer", []string{"Authorization", "Bearer "}},
		{"malformed token", []string{"Authorization", "Bearer not-a-token"}},
		{"unknown token", []string{"Authorization", "Bearer bob.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		{"revoked token", []string{"Authorization", "Bearer " + revoked}},
		{"over-long token", []string{"Authorization", "Bearer " + strings.Repeat("a", 600)}},
	}
	before := e.stored()
	for _, r := range routes {
		method, target := sample(r.Pattern)
		t.Run(r.Access.String()+" "+r.Pattern, func(t *testing.T) {
			switch r.Access {
			case Public:
				// Signing in with a wrong password is a 401 too, but
				// never a request to sign in first.
				if w := e.do(t, method, target, "{}"); strings.Contains(w.Body.String(), "sign in first") || w.Code == http.StatusForbidden {
					t.Fatalf("%s %s without a token = %d %s", method, target, w.Code, w.Body)
				}
			case SignedIn, AdminOnly:
				for _, bad := range badTokens {
					w := e.do(t, method, target, "{}", bad.headers...)
					mustErrorBody(t, w, http.StatusUnauthorized, "unauthorized")
					if w.Header().Get("WWW-Authenticate") != "Bearer" {
						t.Fatalf("%s: %s %s = 401 without WWW-Authenticate", bad.name, method, target)
					}
				}
				if r.Access == AdminOnly {
					calls, made, revoked := len(e.admin.calls), len(e.tokens.made), len(e.tokens.revoked)
					mustError(t, e.call(t, user, method, target, "{}"), http.StatusForbidden, "forbidden", "only an admin")
					if len(e.admin.calls) != calls || len(e.tokens.made) != made || len(e.tokens.revoked) != revoked {
						t.Fatalf("%s %s: a refused call reached the cluster: %v %+v", method, target, e.admin.calls, e.tokens)
					}
					if w := e.call(t, admin, method, target, "{}"); w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden {
						t.Fatalf("%s %s as an admin = %d %s", method, target, w.Code, w.Body)
					}
				}
			case InStream:
				for _, bad := range badTokens[1:] {
					w := e.do(t, method, target, "", bad.headers...)
					mustErrorBody(t, w, http.StatusUnauthorized, "unauthorized")
				}
			default:
				t.Fatalf("route %s has access %v", r.Pattern, r.Access)
			}
		})
		if after := e.stored(); after != before {
			t.Fatalf("%s %s: a refused or read-only request changed state: %s, then %s", method, target, before, after)
		}
	}
}
