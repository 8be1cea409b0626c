package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/account"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/kv/kvtest"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/queue/queuetest"
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
	accRep  *kvtest.Replicator
	chatRep *kvtest.Replicator
	qRep    *queuetest.Replicator
	linkRep *kvtest.Replicator
}

// envOptions adjust a fullEnv.
type envOptions struct {
	registration account.RegistrationMode
	rateLimit    int // attempts per minute; 0: 1000
	cfg          Config
}

func newFullEnv(t *testing.T, o envOptions) *fullEnv {
	t.Helper()
	e := &fullEnv{
		clk:     &clock{now: time.UnixMilli(0)},
		accRep:  kvtest.NewReplicator(4, account.StateMachine{}),
		chatRep: kvtest.NewReplicator(4, chat.StateMachine{}),
		qRep:    queuetest.NewReplicator(4),
		linkRep: kvtest.NewReplicator(4, link.StateMachine{}),
	}
	if o.rateLimit == 0 {
		o.rateLimit = 1000
	}
	accounts, err := account.NewService(e.accRep, account.Config{
		Registration:      o.registration,
		Hash:              account.HashParams{MemoryKiB: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32},
		AttemptsPerMinute: o.rateLimit,
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
	cfg.Rooms = chat.NewService(e.chatRep, chat.Config{Hash: chat.HashParams{Time: 1, MemoryKiB: 64, Threads: 1}})
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

// applied returns how many commands every replicator has applied, to check
// that refused requests change nothing.
func (e *fullEnv) applied() [4]uint64 {
	var n [4]uint64
	for p := uint64(1); p <= 4; p++ {
		n[0] += e.accRep.Applied(p)
		n[1] += e.chatRep.Applied(p)
		n[2] += e.qRep.Applied(p)
		n[3] += e.linkRep.Applied(p)
	}
	return n
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
