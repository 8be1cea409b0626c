package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// clock is a settable clock for the account service. It starts at the Unix
// epoch, like the in-memory replicator's leader time, so sessions expire on
// the same time line.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fullEnv is a Server with every domain: real services over in-memory
// replicators, cheap password hashing and controllable clocks.
type fullEnv struct {
	*testEnv
	clk     *clock
	accRep  *statetest.Replicator
	chatRep *statetest.Replicator
	qRep    *statetest.Replicator
	linkRep *statetest.Replicator
	writes  atomic.Int64 // Set and Delete calls of account, chat and link
}

// envOptions adjust a fullEnv.
type envOptions struct {
	registration account.RegistrationMode
	rateLimit    int           // attempts per minute; 0: 1000
	sessionTTL   time.Duration // 0: account.DefaultSessionTTL
	cfg          Config
}

func newFullEnv(t *testing.T, o envOptions) *fullEnv {
	t.Helper()
	e := &fullEnv{
		clk:  &clock{now: time.UnixMilli(0)},
		qRep: statetest.NewReplicator(4, queue.StateMachine{}),
	}
	e.qRep.Freeze(statetest.Start)
	e.qRep.NotifyOn(queue.NotifyQueue)
	e.accRep = statetest.NewReplicator(4, countingApplier{account.StateMachine{}, &e.writes})
	e.chatRep = statetest.NewReplicator(4, countingApplier{chat.StateMachine{}, &e.writes})
	e.linkRep = statetest.NewReplicator(4, countingApplier{link.StateMachine{}, &e.writes})
	if o.rateLimit == 0 {
		o.rateLimit = 1000
	}
	accounts, err := account.NewService(e.accRep, account.Config{
		Registration:      o.registration,
		Hasher:            passwordtest.Hasher(),
		AttemptsPerMinute: o.rateLimit,
		SessionTTL:        o.sessionTTL,
		Now:               e.clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	links, err := link.NewService(e.linkRep, link.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.cfg
	cfg.Accounts = accounts
	cfg.Rooms = chat.NewService(e.chatRep, chat.Config{Hasher: passwordtest.Hasher()})
	cfg.Queues = queue.NewService(e.qRep, queue.Config{
		Now:      e.qRep.Now,
		Notifier: e.qRep,
		IsAdmin: func(ctx context.Context, user string) (bool, error) {
			id, _ := IdentityFrom(ctx)
			return id.Admin && strings.EqualFold(id.User, user), nil
		},
	})
	cfg.Links = links
	cfg.LoginRateLimit = o.rateLimit
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
	for p := uint64(1); p <= 4; p++ {
		keys = append(keys, e.qRep.Keys(p)...)
	}
	return fmt.Sprintf("%d writes, queue keys %q", e.writes.Load(), keys)
}

// countingApplier counts the writes of a state machine.
type countingApplier struct {
	app    state.Applier
	writes *atomic.Int64
}

func (c countingApplier) Apply(w state.Writer, meta state.Meta, cmd []byte) ([]byte, error) {
	return c.app.Apply(countingWriter{w, c.writes}, meta, cmd)
}

type countingWriter struct {
	state.Writer
	writes *atomic.Int64
}

func (c countingWriter) Set(k, v []byte) error {
	c.writes.Add(1)
	return c.Writer.Set(k, v)
}

func (c countingWriter) Delete(k []byte) error {
	c.writes.Add(1)
	return c.Writer.Delete(k)
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

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
