package api

import (
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/parley-chat/parley/internal/account"
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
			if !ok || !slices.Contains([]string{"handle", "handleAuth", "handleSession", "handleAdmin", "addRoute"}, sel.Sel.Name) {
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

// tokenNeeds is the rule the token matrix checks the table against, written
// out again: what a personal API token needs for a route.
func tokenNeeds(r Route) (level account.Level, sessionOnly bool) {
	method, path := sample(r.Pattern)
	switch {
	case strings.HasPrefix(path, "/api/v1/tokens") || r.Pattern == "DELETE /api/v1/sessions/current":
		return 0, true
	case r.Access == Public:
		return 0, false
	case r.Access == AdminOnly:
		return account.LevelAdmin, false
	case method == http.MethodGet || method == http.MethodHead || r.Access == InStream:
		return account.LevelRead, false
	default:
		return account.LevelWrite, false
	}
}

// The permission matrix for personal API tokens, generated from the route
// table: every route that needs a token is called with a token of each
// scope (the admin's, so that only the scope decides) and with tokens
// narrowed to the sample room and queue "x" and to other ones; a token
// whose scopes do not cover the route gets 403 naming its scopes and
// changes nothing, one whose scopes do is let through; no token may manage
// tokens or sign out.
func TestRoutes_TokenScopeMatrix(t *testing.T) {
	e := newMatrixEnv(t)
	admin := e.signUp(t, "alice") // the first user: admin
	token := func(scopes ...string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"name": strings.Join(scopes, " "), "scopes": scopes})
		var tok apiTokenJSON
		mustJSON(t, e.call(t, admin, http.MethodPost, "/api/v1/tokens", string(body)), http.StatusCreated, &tok)
		return tok.Token
	}
	type holder struct {
		scopes []string
		token  string
		// allows says whether the scopes cover a route needing level on
		// the sample's room or queue (kind "": on neither).
		allows func(level account.Level, kind string) bool
	}
	level := func(l account.Level) func(account.Level, string) bool {
		return func(need account.Level, _ string) bool { return need <= l }
	}
	holders := []holder{
		{scopes: []string{"read"}, allows: level(account.LevelRead)},
		{scopes: []string{"write"}, allows: level(account.LevelWrite)},
		{scopes: []string{"admin"}, allows: level(account.LevelAdmin)},
		{scopes: []string{"read:queue/x", "write:room/x"}, allows: func(need account.Level, kind string) bool {
			return kind == account.KindRoom && need <= account.LevelWrite || kind == account.KindQueue && need <= account.LevelRead
		}},
		{scopes: []string{"write:queue/other", "write:room/other"}, allows: func(account.Level, string) bool { return false }},
	}
	for i := range holders {
		holders[i].token = token(holders[i].scopes...)
	}
	for _, r := range e.srv.Routes() {
		want, sessionOnly := tokenNeeds(r)
		if r.Token != want || r.SessionOnly != sessionOnly {
			t.Errorf("%s needs token level %v (session only %v), want %v (%v)", r.Pattern, r.Token, r.SessionOnly, want, sessionOnly)
		}
		if r.Access == Public || r.Access == InStream { // the stream: stream_token_test.go
			continue
		}
		method, target := sample(r.Pattern)
		kind := ""
		if strings.Contains(r.Pattern, "{room}") {
			kind = account.KindRoom
		} else if strings.Contains(r.Pattern, "{queue}") {
			kind = account.KindQueue
		}
		for _, h := range holders {
			t.Run(fmt.Sprintf("%s %v", r.Pattern, h.scopes), func(t *testing.T) {
				before := e.stored()
				w := e.call(t, h.token, method, target, "{}")
				refusedByScope := w.Code == http.StatusForbidden && strings.Contains(w.Body.String(), "API token")
				switch allowed := !sessionOnly && h.allows(want, kind); {
				case w.Code == http.StatusUnauthorized:
					t.Fatalf("%s %s with a valid token = 401 %s", method, target, w.Body)
				case allowed && refusedByScope:
					t.Fatalf("%s %s with scopes %v refused: %s", method, target, h.scopes, w.Body)
				case !allowed:
					mustError(t, w, http.StatusForbidden, "forbidden", "API token")
					if !sessionOnly && !strings.Contains(w.Body.String(), h.scopes[0]) {
						t.Fatalf("the refusal does not name the scopes %v: %s", h.scopes, w.Body)
					}
					if after := e.stored(); after != before {
						t.Fatalf("a refused request changed state: %s, then %s", before, after)
					}
				}
			})
		}
	}
}
