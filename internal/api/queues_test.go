package api

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAPI_Queues(t *testing.T) {
	e := newFullEnv(t, envOptions{})
	alice := e.signUp(t, "alice") // admin
	bob := e.signUp(t, "bob")
	carol := e.signUp(t, "carol")

	var q queueJSON
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`), http.StatusCreated, &q)
	if q.Name != "jobs" || q.Creator != "bob" || q.CreatedAt == 0 {
		t.Fatalf("created %+v", q)
	}
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/queues", `{"name":"other","request_id":"c1"}`), http.StatusCreated, nil)
	mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/queues", `{"name":"other"}`, "Idempotency-Key", "c1"), http.StatusCreated, nil)

	t.Run("refused", func(t *testing.T) {
		before := e.stored()
		for _, tc := range []struct {
			name, method, path, body string
			status                   int
			code, want               string
		}{
			{"exists", "POST", "/api/v1/queues", `{"name":"jobs"}`, 409, "conflict", ""},
			{"bad name", "POST", "/api/v1/queues", `{"name":"a b"}`, 400, "invalid", "queue name"},
			{"no name", "POST", "/api/v1/queues", `{}`, 400, "invalid", "queue name"},
			{"unknown field", "POST", "/api/v1/queues", `{"name":"x","durable":true}`, 400, "invalid", `"durable"`},
			{"send without body", "POST", "/api/v1/queues/jobs/messages", `{"to":"bob"}`, 400, "invalid", "body"},
			{"send empty body", "POST", "/api/v1/queues/jobs/messages", `{"body":""}`, 400, "invalid", "body"},
			{"send body not a string", "POST", "/api/v1/queues/jobs/messages", `{"body":{"a":1}}`, 400, "invalid", "body"},
			{"send body too large", "POST", "/api/v1/queues/jobs/messages", `{"body":"` + strings.Repeat("x", 64<<10+1) + `"}`, 413, "too_large", "body"},
			{"send request too large", "POST", "/api/v1/queues/jobs/messages", `{"body":"` + strings.Repeat(`\u0001`, 70<<10) + `"}`, 413, "too_large", "limit"},
			{"send bad to", "POST", "/api/v1/queues/jobs/messages", `{"body":"x","to":"a b"}`, 400, "invalid", "to"},
			{"send to missing queue", "POST", "/api/v1/queues/none/messages", `{"body":"x"}`, 404, "not_found", ""},
			{"receive negative ack timeout", "POST", "/api/v1/queues/jobs/receive", `{"ack_timeout_ms":-1}`, 400, "invalid", "ack_timeout_ms"},
			{"receive huge ack timeout", "POST", "/api/v1/queues/jobs/receive", `{"ack_timeout_ms":99999999999}`, 400, "invalid", "ack_timeout_ms"},
			{"receive long wait", "POST", "/api/v1/queues/jobs/receive", `{"wait_ms":60000}`, 400, "invalid", "wait_ms"},
			{"receive wait not a number", "POST", "/api/v1/queues/jobs/receive", `{"wait_ms":"1s"}`, 400, "invalid", "wait_ms"},
			{"receive bad from", "POST", "/api/v1/queues/jobs/receive", `{"from":"a/b"}`, 400, "invalid", "from"},
			{"receive unknown field", "POST", "/api/v1/queues/jobs/receive", `{"timeout":1}`, 400, "invalid", `"timeout"`},
			{"ack without receipt", "POST", "/api/v1/queues/jobs/ack", `{}`, 400, "invalid", "receipt"},
			{"ack unknown receipt", "POST", "/api/v1/queues/jobs/ack", `{"receipt":"nonsense"}`, 409, "conflict", "receipt"},
			{"peek bad from", "GET", "/api/v1/queues/jobs/peek?from=a%2Fb", "", 400, "invalid", "from"},
			{"list bad waiting", "GET", "/api/v1/queues?waiting=maybe", "", 400, "invalid", "waiting"},
			{"delete by another", "DELETE", "/api/v1/queues/jobs", "", 403, "forbidden", ""},
			{"delete missing", "DELETE", "/api/v1/queues/none", "", 404, "not_found", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				mustError(t, e.call(t, carol, tc.method, tc.path, tc.body), tc.status, tc.code, tc.want)
			})
		}
		if after := e.stored(); after != before {
			t.Fatalf("refused requests changed state: %s, then %s", before, after)
		}
	})
	t.Run("send, peek, receive", func(t *testing.T) {
		var sent sendResponse
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/queues/jobs/messages", `{"body":"for carol","to":"carol"}`), http.StatusCreated, &sent)
		if sent.ID != 1 || sent.Ts == 0 {
			t.Fatalf("sent %+v", sent)
		}
		mustJSON(t, e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/messages", `{"body":"for anyone"}`), http.StatusCreated, nil)
		if w := e.call(t, alice, http.MethodGet, "/api/v1/queues/jobs/peek?from=bob", ""); w.Code != http.StatusNoContent || w.Body.Len() != 0 {
			t.Fatalf("alice's peek from bob = %d %q, want 204 (bob's message is carol's)", w.Code, w.Body)
		}
		var m messageJSON
		mustJSON(t, e.call(t, carol, http.MethodGet, "/api/v1/queues/jobs/peek", ""), http.StatusOK, &m)
		if m.ID != 1 || m.Sender != "bob" || m.To != "carol" || m.Body != "for carol" {
			t.Fatalf("carol's peek %+v", m)
		}
		var qs queuesResponse
		mustJSON(t, e.call(t, carol, http.MethodGet, "/api/v1/queues?waiting=true", ""), http.StatusOK, &qs)
		if len(qs.Queues) != 1 || qs.Queues[0].Name != "jobs" || qs.Queues[0].Messages != 2 {
			t.Fatalf("carol's waiting queues %+v", qs.Queues)
		}
		mustJSON(t, e.call(t, carol, http.MethodGet, "/api/v1/queues", ""), http.StatusOK, &qs)
		if len(qs.Queues) != 2 {
			t.Fatalf("all queues %+v", qs.Queues)
		}
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", ""), http.StatusOK, &m)
		if m.ID != 1 || m.Receipt != "" {
			t.Fatalf("received %+v", m)
		}
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", `{"from":"alice"}`), http.StatusOK, &m)
		if m.ID != 2 {
			t.Fatalf("received %+v", m)
		}
		if w := e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", `{}`); w.Code != http.StatusNoContent {
			t.Fatalf("receive from an empty queue = %d %s", w.Code, w.Body)
		}
	})
	t.Run("lease, redelivery, ack", func(t *testing.T) {
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/queues/jobs/messages", `{"body":"leased"}`), http.StatusCreated, nil)
		var m messageJSON
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", `{"ack_timeout_ms":1000}`), http.StatusOK, &m)
		if m.Receipt == "" || m.LeaseExpiresAt == 0 || m.Deliveries != 1 {
			t.Fatalf("leased %+v", m)
		}
		if w := e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", ""); w.Code != http.StatusNoContent {
			t.Fatalf("a leased message was delivered again at once: %d %s", w.Code, w.Body)
		}
		e.QueueRep.Advance(1500 * time.Millisecond)
		var again messageJSON
		mustJSON(t, e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", `{"ack_timeout_ms":1000}`), http.StatusOK, &again)
		if again.ID != m.ID || again.Deliveries != 2 {
			t.Fatalf("redelivered %+v, want message %d's second delivery", again, m.ID)
		}
		mustError(t, e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/ack", `{"receipt":"`+m.Receipt+`"}`), 409, "conflict", "")
		mustError(t, e.call(t, bob, http.MethodPost, "/api/v1/queues/jobs/ack", `{"receipt":"`+again.Receipt+`"}`), 409, "conflict", "")
		if w := e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/ack", `{"receipt":"`+again.Receipt+`"}`); w.Code != http.StatusNoContent {
			t.Fatalf("ack = %d %s", w.Code, w.Body)
		}
		e.QueueRep.Advance(1500 * time.Millisecond)
		if w := e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", ""); w.Code != http.StatusNoContent {
			t.Fatalf("an acked message came back: %d %s", w.Code, w.Body)
		}
	})
	t.Run("long poll", func(t *testing.T) {
		done := make(chan messageJSON, 1)
		go func() {
			var m messageJSON
			w := e.call(t, carol, http.MethodPost, "/api/v1/queues/jobs/receive", `{"wait_ms":5000}`)
			if w.Code == http.StatusOK {
				_ = jsonUnmarshal(w.Body.Bytes(), &m)
			}
			done <- m
		}()
		time.Sleep(50 * time.Millisecond)
		mustJSON(t, e.call(t, bob, http.MethodPost, "/api/v1/queues/jobs/messages", `{"body":"late"}`), http.StatusCreated, nil)
		select {
		case m := <-done:
			if m.Body != "late" {
				t.Fatalf("long poll got %+v", m)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("long poll did not return")
		}
	})
	t.Run("delete", func(t *testing.T) {
		if w := e.call(t, bob, http.MethodDelete, "/api/v1/queues/jobs", ""); w.Code != http.StatusNoContent {
			t.Fatalf("creator delete = %d %s", w.Code, w.Body)
		}
		if w := e.call(t, alice, http.MethodDelete, "/api/v1/queues/other", ""); w.Code != http.StatusNoContent {
			t.Fatalf("admin delete = %d %s", w.Code, w.Body)
		}
		mustError(t, e.call(t, carol, http.MethodGet, "/api/v1/queues/jobs/peek", ""), 404, "not_found", "")
	})
}
