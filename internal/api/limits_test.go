package api

import (
	"context"
	"errors"
	"github.com/parley-chat/parley/internal/audit"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/ratelimit"
	"github.com/parley-chat/parley/internal/stream"
)

// One user flooding a room is refused with 429, a Retry-After and the
// limit's name, while another user's posts go on; refused posts store
// nothing, and the flooder may post again once the bucket refills.
func TestAPI_PostLimit(t *testing.T) {
	e := newFullEnv(t, envOptions{limits: ratelimit.Config{Rates: map[string]ratelimit.Rate{
		ratelimit.Posts: {N: 5, Per: 10 * time.Second},
	}}})
	alice, bob := e.signUp(t, "alice"), e.signUp(t, "bob")
	mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/rooms", `{"name":"lobby"}`), http.StatusCreated, nil)
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/rooms/lobby/join", `{}`), http.StatusOK, nil)
	post := func(token string) *httptest.ResponseRecorder {
		return e.call(t, token, http.MethodPost, "/api/v1/rooms/lobby/messages", `{"text":"hi"}`)
	}
	for i := range 5 {
		if w := post(alice); w.Code != http.StatusCreated {
			t.Fatalf("alice's post %d = %d %s", i+1, w.Code, w.Body)
		}
	}
	before := e.stored()
	for range 20 {
		w := post(alice)
		mustError(t, w, http.StatusTooManyRequests, "rate_limited", `limit "posts" reached (5/10s per user)`)
		if got := w.Header().Get("Retry-After"); got != "2" {
			t.Fatalf("Retry-After = %q, want 2 (a post every 2 s)", got)
		}
	}
	if after := e.stored(); after != before {
		t.Fatalf("refused posts stored something: %s, then %s", before, after)
	}
	for i := range 5 {
		if w := post(bob); w.Code != http.StatusCreated {
			t.Fatalf("bob's post %d while alice floods = %d %s", i+1, w.Code, w.Body)
		}
	}
	e.Clock.Advance(2 * time.Second)
	if w := post(alice); w.Code != http.StatusCreated {
		t.Fatalf("alice's post after the refill = %d %s", w.Code, w.Body)
	}
}

// Each limited route refuses past its limit with 429 naming the limit.
func TestAPI_RateLimits(t *testing.T) {
	hourly := ratelimit.Rate{N: 1, Per: time.Hour}
	e := newFullEnv(t, envOptions{limits: ratelimit.Config{Rates: map[string]ratelimit.Rate{
		ratelimit.RoomCreates: hourly, ratelimit.QueueCreates: hourly, ratelimit.LinkCreates: hourly, ratelimit.QueueSends: hourly,
	}}})
	alice := e.signUp(t, "alice")
	for _, tc := range []struct {
		limit, path, first, second string
	}{
		{ratelimit.RoomCreates, "/api/v1/rooms", `{"name":"r1"}`, `{"name":"r2"}`},
		{ratelimit.QueueCreates, "/api/v1/queues", `{"name":"q1"}`, `{"name":"q2"}`},
		{ratelimit.QueueSends, "/api/v1/queues/q1/messages", `{"body":"one"}`, `{"body":"two"}`},
		{ratelimit.LinkCreates, "/api/v1/links", `{"url":"https://example.com/1"}`, `{"url":"https://example.com/2"}`},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			mustJSON(t, e.call(t, alice, http.MethodPost, tc.path, tc.first), http.StatusCreated, nil)
			w := e.call(t, alice, http.MethodPost, tc.path, tc.second)
			mustError(t, w, http.StatusTooManyRequests, "rate_limited", `limit "`+tc.limit+`" reached (1/h per user)`)
			if got := w.Header().Get("Retry-After"); got != "3600" {
				t.Fatalf("Retry-After = %q, want 3600", got)
			}
		})
	}
}

// A user's long polls past the limit are refused; receives without a wait
// are not long polls and are not counted.
func TestAPI_LongPollLimit(t *testing.T) {
	e := newFullEnv(t, envOptions{limits: ratelimit.Config{Slots: map[string]int{ratelimit.LongPolls: 1}}})
	alice := e.signUp(t, "alice")
	mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`), http.StatusCreated, nil)
	// Alice's one long poll is waiting elsewhere (on another node, say).
	release, err := e.limiter.Hold(context.Background(), ratelimit.LongPolls, "alice")
	if err != nil {
		t.Fatal(err)
	}
	w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/receive", `{"wait_ms":1000}`)
	mustError(t, w, http.StatusTooManyRequests, "rate_limited", `limit "long-polls" reached (1 at once per user)`)
	if got := w.Header().Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After = %q, want 1", got)
	}
	if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/receive", `{}`); w.Code != http.StatusNoContent {
		t.Fatalf("a receive without a wait = %d %s", w.Code, w.Body)
	}
	release()
	if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/receive", `{"wait_ms":1}`); w.Code != http.StatusNoContent {
		t.Fatalf("a long poll after the other ended = %d %s", w.Code, w.Body)
	}
	if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/receive", `{"wait_ms":1}`); w.Code != http.StatusNoContent {
		t.Fatalf("a long poll did not give its slot back: %d %s", w.Code, w.Body)
	}
}

// A stream past the limit is refused with 429 before the upgrade when the
// token comes in the header, and with a rate_limited frame and close code
// 1013 when it comes in the first frame; closing a stream frees its slot.
func TestStream_Limit(t *testing.T) {
	ts := newTestStreams(t, stream.Config{})
	fe := newFullEnv(t, envOptions{
		limits: ratelimit.Config{Slots: map[string]int{ratelimit.Streams: 1}},
		cfg:    Config{Streams: ts},
	})
	ts.rep = fe.RoomRep
	srv := httptest.NewServer(fe.h)
	t.Cleanup(srv.Close)
	e := &streamEnv{fullEnv: fe, streams: ts, srv: srv}
	token := e.signUp(t, "alice")
	auth := []string{"Authorization", "Bearer " + token}

	first := e.mustDial(t, "", auth...)
	_, resp, err := e.dial(t, "", auth...)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("second stream: %v %+v, want 429 with Retry-After 1", err, resp)
	}
	c := e.mustDial(t, "")
	send(t, c, `{"type":"auth","token":"`+token+`"}`)
	if f := next(t, c); f.Type != stream.TypeError || f.Code != string(errs.RateLimited) {
		t.Fatalf("frame %+v, want a rate_limited error", f)
	}
	if st := closedWith(t, c); st != websocket.StatusTryAgainLater {
		t.Fatalf("closed with %d, want 1013", st)
	}
	bob := e.signUp(t, "bob")
	e.mustDial(t, "", "Authorization", "Bearer "+bob) // another user's stream

	first.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, resp, err := e.dial(t, "", auth...)
		if err == nil {
			break
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after the first stream closed: %v %+v", err, resp)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The Retry-After of a refusal is the wait its cause names, in whole
// seconds rounded up; other 429s and 503s say 1.
func TestAPI_RetryAfterOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ratelimit.Refusal(ratelimit.Posts, ratelimit.Rate{N: 1, Per: time.Minute}, 59*time.Second), "59"},
		{ratelimit.Refusal(ratelimit.Posts, ratelimit.Rate{N: 1, Per: time.Minute}, 1500*time.Millisecond), "2"},
		{ratelimit.Refusal(ratelimit.Streams, 3, 0), "1"},
		{errs.New(errs.RateLimited, "slow down"), "1"},
		{errors.New("plain"), "1"},
	} {
		if got := retryAfterOf(tc.err); got != tc.want {
			t.Errorf("retryAfterOf(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// A flood past a limit is audited once per user and limit, not once per
// refused request.
func TestAPI_LimitRefusalsAudited(t *testing.T) {
	lines := &syncBuffer{}
	log := audit.NewLog("n1", slog.New(slog.NewJSONHandler(lines, nil)))
	e := newFullEnv(t, envOptions{cfg: Config{Audit: log}, limits: ratelimit.Config{Rates: map[string]ratelimit.Rate{
		ratelimit.Posts: {N: 1, Per: time.Minute},
	}}})
	alice := e.signUp(t, "alice")
	mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/rooms", `{"name":"lobby"}`), http.StatusCreated, nil)
	for range 50 {
		e.call(t, alice, http.MethodPost, "/api/v1/rooms/lobby/messages", `{"text":"hi"}`)
	}
	var limited []audit.Event
	for _, ev := range log.List() {
		if ev.Kind == audit.KindRateLimited {
			limited = append(limited, ev)
		}
	}
	if len(limited) != 1 || limited[0].Actor != "alice" || limited[0].Target != ratelimit.Posts || limited[0].Outcome != audit.Refused {
		t.Fatalf("audited %+v, want one rate_limited event for alice's posts", limited)
	}
}
