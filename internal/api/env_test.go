package api

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/servicetest"
)

// fullEnv is a Server with every domain: the services of servicetest (real
// services over in-memory replicators, cheap password hashing and
// controllable clocks).
type fullEnv struct {
	*testEnv
	*servicetest.Stack
	limiter *ratelimit.Local // the per-user and login limits, on the stack's clock
}

// envOptions adjust a fullEnv.
type envOptions struct {
	registration account.RegistrationMode
	rateLimit    int           // login attempts per minute per address; 0: 1000
	sessionTTL   time.Duration // 0: account.DefaultSessionTTL
	// limits are the per-user limits of a local Limiter (on the stack's
	// clock); none by default.
	limits ratelimit.Config
	cfg    Config
}

func newFullEnv(t *testing.T, o envOptions) *fullEnv {
	t.Helper()
	if o.rateLimit == 0 {
		o.rateLimit = 1000
	}
	e := &fullEnv{}
	lc := ratelimit.Config{Rates: map[string]ratelimit.Rate{}, Slots: o.limits.Slots}
	maps.Copy(lc.Rates, o.limits.Rates)
	lc.Rates[ratelimit.LoginsPerAddress] = ratelimit.Rate{N: o.rateLimit, Per: time.Minute}
	e.limiter = ratelimit.NewLocal(lc, func() time.Time { return e.Clock.Now() })
	e.Stack = servicetest.New(t, servicetest.Options{
		Registration: o.registration,
		Limiter:      e.limiter,
		SessionTTL:   o.sessionTTL,
		IsAdmin: func(ctx context.Context, user string) (bool, error) {
			id, _ := IdentityFrom(ctx)
			return id.Admin && strings.EqualFold(id.User, user), nil
		},
	})
	cfg := o.cfg
	cfg.Accounts, cfg.Rooms, cfg.Queues, cfg.Links = e.Accounts, e.Rooms, e.Queues, e.Links
	cfg.APITokens = e.Accounts
	cfg.Export, cfg.Hooks, cfg.Files = e.Rooms, e.Rooms, e.Rooms
	cfg.Search = newRefreshingSearch(e.RoomRep)
	cfg.Limiter = e.limiter
	if cfg.PublicURL == "" {
		cfg.PublicURL = "https://par.ly/"
	}
	e.testEnv = newEnv(t, cfg)
	return e
}

// signUp registers user (password "password-"+user) and returns a token.
func (e *fullEnv) signUp(t *testing.T, user string) string {
	t.Helper()
	body := `{"username":"` + user + `","password":"password-` + user + `"}`
	if w := e.do(t, http.MethodPost, "/api/v1/users", body); w.Code != http.StatusCreated {
		t.Fatalf("register %s = %d %s", user, w.Code, w.Body)
	}
	return e.login(t, user)
}

func (e *fullEnv) login(t *testing.T, user string) string {
	t.Helper()
	var s sessionResponse
	mustJSON(t, e.do(t, http.MethodPost, "/api/v1/sessions", `{"username":"`+user+`","password":"password-`+user+`"}`), http.StatusCreated, &s)
	return s.Token
}

// call sends a request as the holder of token; headers alternate name,
// value.
func (e *fullEnv) call(t *testing.T, token, method, target, body string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	return e.do(t, method, target, body, append([]string{"Authorization", "Bearer " + token}, headers...)...)
}

// stored sums up the stored data: the writes of the account, chat and link
// state machines and the queue partitions' keys, to check that refused
// requests change nothing.
func (e *fullEnv) stored() string {
	var keys []string
	for _, p := range e.QueueRep.Partitions() {
		keys = append(keys, e.QueueRep.Keys(p)...)
	}
	return fmt.Sprintf("%d writes, queue keys %q", e.Writes(), keys)
}

// mustJSON checks w's status and decodes its JSON body into out (nil: no
// body check).
func mustJSON(t *testing.T, w *httptest.ResponseRecorder, status int, out any) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d; body %s", w.Code, status, w.Body)
	}
	if out == nil {
		return
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
		t.Fatalf("body %s: %v", w.Body, err)
	}
}

// mustError checks w is a JSON error with status and code whose message
// contains want.
func mustError(t *testing.T, w *httptest.ResponseRecorder, status int, code, want string) {
	t.Helper()
	msg := mustErrorBody(t, w, status, code)
	if !strings.Contains(msg.Message, want) {
		t.Fatalf("message %q does not mention %q", msg.Message, want)
	}
}

func newRequest(method, target, body string) *http.Request {
	return httptest.NewRequest(method, target, strings.NewReader(body))
}

// serve sends r through h and checks the answer against openapi.json
// (checkResponse).
func serve(t testing.TB, h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	checkResponse(t, r, w)
	return w
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
