package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/account"
)

// The actor matrices: queue, personal API token and incoming webhook routes
// crossed with who calls them (anonymous, other users, the creator, an
// admin, and personal API tokens of each scope held by them). Like
// roomMatrix, each is keyed by route pattern and checked against the route
// table: a route of its family without a row fails, and so does a row
// naming no route. Adding a route means adding one row.

// routeFamilies names, for every path prefix of the API, the matrix that
// checks who may call its routes beyond TestRoutes_PermissionMatrix and
// TestRoutes_TokenScopeMatrix (which cover every route): a route under no
// prefix fails TestRoutes_EveryRouteHasAFamily, so that a new family of
// routes gets a matrix, or is declared to need none, knowingly.
var routeFamilies = map[string]string{
	"/api/v1/rooms/{room}": "roomMatrix, roomTokenMatrix",
	"/api/v1/queues":       "queueMatrix",
	"/api/v1/tokens":       "apiTokenMatrix",
	"/api/v1/hooks/":       "hookMatrix",
	"/api/v1/files":        "fileMatrix",
	// Not about one owned thing: any signed-in user (or the public),
	// admin routes, and the stream, checked by the route-wide matrices.
	"/api/v1/rooms":        "route-wide: any signed-in user",
	"/api/v1/users":        "route-wide",
	"/api/v1/sessions":     "route-wide",
	"/api/v1/mentions":     "route-wide",
	"/api/v1/search":       "route-wide: any signed-in user; what each finds: TestSearch_Route, internal/search",
	"/api/v1/stream":       "route-wide (stream_token_test.go)",
	"/api/v1/kv":           "route-wide: one shared namespace",
	"/api/v1/leases":       "route-wide: one shared namespace",
	"/api/v1/links":        "route-wide; owners: links_test.go",
	"/api/v1/cluster":      "route-wide: admin",
	"/api/v1/partitions":   "route-wide: any signed-in user",
	"/api/v1/audit":        "route-wide: admin",
	"/api/v1/openapi.json": "route-wide: public",
	"/api/":                "route-wide: the JSON 404 catch-all",
	"/s/":                  "route-wide: public redirects",
	"/healthz":             "route-wide: public",
	"/readyz":              "route-wide: public",
}

// familyOf returns the longest prefix of routeFamilies that the route's
// path starts with at a segment boundary, "" for none.
func familyOf(pattern string) string {
	_, path, ok := strings.Cut(pattern, " ")
	if !ok {
		path = pattern // a catch-all
	}
	best := ""
	for p := range routeFamilies {
		boundary := len(path) == len(p) || strings.HasSuffix(p, "/") || len(path) > len(p) && path[len(p)] == '/'
		if strings.HasPrefix(path, p) && boundary && len(p) > len(best) {
			best = p
		}
	}
	return best
}

func TestRoutes_EveryRouteHasAFamily(t *testing.T) {
	e := newMatrixEnv(t)
	for _, r := range e.srv.Routes() {
		if familyOf(r.Pattern) == "" {
			t.Errorf("route %s is in no family of routeFamilies: add its matrix (or say why it needs none)", r.Pattern)
		}
	}
}

// checkRows fails t unless rows has a row for every route of the table in
// family, and names no other route; it returns the family's patterns.
func checkRows[R any](t *testing.T, routes []Route, family, matrix string, rows map[string]R) []string {
	t.Helper()
	var patterns []string
	for _, r := range routes {
		if familyOf(r.Pattern) != family {
			continue
		}
		patterns = append(patterns, r.Pattern)
		if _, ok := rows[r.Pattern]; !ok {
			t.Errorf("route %s has no row in %s: say who may call it", r.Pattern, matrix)
		}
	}
	for p := range rows {
		if !slices.Contains(patterns, p) {
			t.Errorf("%s row %s names no route of the table", matrix, p)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return patterns
}

// scopeAllows is whether a personal API token with scopes may call route r
// on the room or queue kind/name by the rule tokenNeeds writes out.
func scopeAllows(t *testing.T, r Route, scopes []string, kind, name string) bool {
	t.Helper()
	s, err := account.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	level, sessionOnly := tokenNeeds(r)
	return !sessionOnly && s.Allows(level, kind, name)
}

// mintToken makes a personal API token with scopes for the holder of the
// login session; it returns the token and its id.
func (e *matrixEnv) mintToken(t *testing.T, session string, scopes ...string) (token, id string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": "matrix " + strings.Join(scopes, " "), "scopes": scopes})
	var tok apiTokenJSON
	mustJSON(t, e.call(t, session, http.MethodPost, "/api/v1/tokens", string(body)), http.StatusCreated, &tok)
	return tok.Token, tok.ID
}

// matrixCall calls method target with body as the holder of token (""
// anonymous).
func (e *matrixEnv) matrixCall(t *testing.T, token, method, target, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	if token == "" {
		return e.do(t, method, target, body, headers...)
	}
	return e.call(t, token, method, target, body, headers...)
}

// mustRefusal checks that w is the refusal of an anonymous caller (401), of
// a token's scopes (403 naming the API token) or of the domain (status).
func mustRefusal(t *testing.T, w *httptest.ResponseRecorder, anonymous, byScope bool, status int) {
	t.Helper()
	switch {
	case anonymous:
		mustErrorBody(t, w, http.StatusUnauthorized, "unauthorized")
	case byScope:
		mustError(t, w, http.StatusForbidden, "forbidden", "API token")
	default:
		mustErrorBody(t, w, status, codeOfStatus(status))
	}
}

// codeOfStatus is the error code the API answers with status in the
// matrices.
func codeOfStatus(status int) string {
	return map[int]string{http.StatusForbidden: "forbidden", http.StatusConflict: "conflict", http.StatusNotFound: "not_found"}[status]
}

// Queue actors: who calls a queue route, relative to the queue.
const (
	qAnonymous = "anonymous"
	qOther     = "other user"
	qCreator   = "creator"
	qAdmin     = "admin" // a cluster admin who did not create the queue
)

var (
	qSignedIn = []string{qOther, qCreator, qAdmin}
	qOwners   = []string{qCreator, qAdmin}
)

// queueRow is the matrix row of one queue route: the body of the sample
// call ({receipt}: the receipt of the queue's message, leased by the
// creator; {new}: a fresh queue name), who may call it, and the status of
// the refusal of the other signed-in callers (0: 403).
type queueRow struct {
	body    string
	allow   []string
	refused int
}

// queueMatrix has a row for every queue route. The sample queue was made by
// its creator and holds one message for anyone, leased by the creator.
var queueMatrix = map[string]queueRow{
	"POST /api/v1/queues":                        {body: `{"name":"{new}"}`, allow: qSignedIn},
	"GET /api/v1/queues":                         {allow: qSignedIn},
	"DELETE /api/v1/queues/{queue}":              {allow: qOwners},
	"GET /api/v1/queues/{queue}":                 {allow: qSignedIn},
	"PATCH /api/v1/queues/{queue}":               {body: `{"max_deliveries":5}`, allow: qOwners},
	"POST /api/v1/queues/{queue}/messages":       {body: `{"body":"hi"}`, allow: qSignedIn},
	"POST /api/v1/queues/{queue}/messages/batch": {body: `{"messages":[{"body":"a"},{"body":"b"}]}`, allow: qSignedIn},
	"GET /api/v1/queues/{queue}/messages":        {allow: qSignedIn},
	"GET /api/v1/queues/{queue}/peek":            {allow: qSignedIn},
	"POST /api/v1/queues/{queue}/receive":        {body: `{}`, allow: qSignedIn},
	// A lease is its holder's: another's receipt is unknown to them (409),
	// an admin's included.
	"POST /api/v1/queues/{queue}/ack":     {body: `{"receipt":"{receipt}"}`, allow: []string{qCreator}, refused: http.StatusConflict},
	"POST /api/v1/queues/{queue}/nack":    {body: `{"receipt":"{receipt}"}`, allow: []string{qCreator}, refused: http.StatusConflict},
	"POST /api/v1/queues/{queue}/extend":  {body: `{"receipt":"{receipt}","ack_timeout_ms":60000}`, allow: []string{qCreator}, refused: http.StatusConflict},
	"POST /api/v1/queues/{queue}/purge":   {allow: qOwners},
	"POST /api/v1/queues/{queue}/redrive": {allow: qOwners},
}

// queueCaller is one caller of the queue matrix: an actor, itself or
// through a personal API token with scopes ({q}: the sample queue).
type queueCaller struct {
	actor  string
	scopes []string
	// as is the actor whose powers the caller has: an admin's token without
	// the admin scope acts as a plain user.
	as string
}

var queueCallers = []queueCaller{
	{actor: qAnonymous, as: qAnonymous},
	{actor: qOther, as: qOther},
	{actor: qCreator, as: qCreator},
	{actor: qAdmin, as: qAdmin},
	{actor: qCreator, scopes: []string{"read"}, as: qCreator},
	{actor: qCreator, scopes: []string{"write"}, as: qCreator},
	{actor: qCreator, scopes: []string{"read:queue/{q}"}, as: qCreator},
	{actor: qCreator, scopes: []string{"write:queue/{q}"}, as: qCreator},
	{actor: qCreator, scopes: []string{"write:queue/other", "write:room/{q}"}, as: qCreator},
	{actor: qAdmin, scopes: []string{"write"}, as: qOther},
	{actor: qAdmin, scopes: []string{"admin"}, as: qAdmin},
}

// TestQueues_ActorMatrix calls every queue route, taken from the route
// table, as each queue caller, on a queue of its own: the allowed get a 2xx;
// the others 401 (anonymous), 403 naming the token (scopes that do not
// cover the route) or the row's refusal, and change nothing.
func TestQueues_ActorMatrix(t *testing.T) {
	e := newMatrixEnv(t)
	patterns := checkRows(t, e.srv.Routes(), "/api/v1/queues", "queueMatrix", queueMatrix)
	sessions := map[string]string{qAnonymous: ""}
	sessions[qAdmin] = e.signUp(t, "alice") // the first user: an admin
	sessions[qCreator] = e.signUp(t, "cara")
	sessions[qOther] = e.signUp(t, "otto")
	routes := map[string]Route{}
	for _, r := range e.srv.Routes() {
		routes[r.Pattern] = r
	}
	n := 0
	for _, pattern := range patterns {
		row, r := queueMatrix[pattern], routes[pattern]
		for _, c := range queueCallers {
			n++
			q := fmt.Sprintf("q%d", n)
			receipt := setupMatrixQueue(t, e, sessions[qCreator], q)
			token := sessions[c.actor]
			scopes := make([]string, len(c.scopes))
			for i, s := range c.scopes {
				scopes[i] = strings.ReplaceAll(s, "{q}", q)
			}
			if len(scopes) > 0 {
				token, _ = e.mintToken(t, sessions[c.actor], scopes...)
			}
			method, path, _ := strings.Cut(pattern, " ")
			path = strings.ReplaceAll(path, "{queue}", q)
			body := strings.NewReplacer("{receipt}", receipt, "{new}", q+"-new").Replace(row.body)
			t.Run(fmt.Sprintf("%s as %s %v", pattern, c.actor, c.scopes), func(t *testing.T) {
				kind := ""
				if strings.Contains(pattern, "{queue}") {
					kind = account.KindQueue
				}
				byScope := len(scopes) > 0 && !scopeAllows(t, r, scopes, kind, q)
				before := e.stored()
				w := e.matrixCall(t, token, method, path, body)
				if !byScope && slices.Contains(row.allow, c.as) {
					if w.Code < 200 || w.Code > 299 {
						t.Fatalf("%s %s = %d %s, want success", method, path, w.Code, w.Body)
					}
					return
				}
				mustRefusal(t, w, c.actor == qAnonymous, byScope, max(row.refused, http.StatusForbidden))
				if after := e.stored(); after != before {
					t.Fatalf("a refused %s %s changed state: %s, then %s", method, path, before, after)
				}
			})
		}
	}
}

// setupMatrixQueue creates queue q as the holder of creator with one
// message for anyone, leased by the creator, and returns its receipt.
func setupMatrixQueue(t *testing.T, e *matrixEnv, creator, q string) string {
	t.Helper()
	mustJSON(t, e.call(t, creator, http.MethodPost, "/api/v1/queues", `{"name":"`+q+`"}`), http.StatusCreated, nil)
	mustJSON(t, e.call(t, creator, http.MethodPost, "/api/v1/queues/"+q+"/messages", `{"body":"the matrix message"}`), http.StatusCreated, nil)
	var m messageJSON
	mustJSON(t, e.call(t, creator, http.MethodPost, "/api/v1/queues/"+q+"/receive", `{"ack_timeout_ms":60000}`), http.StatusOK, &m)
	if m.Receipt == "" {
		t.Fatalf("set up %s: no receipt in %+v", q, m)
	}
	return m.Receipt
}
