package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/stream"
)

// queueWireFrame is what the queue frames of a stream carry: Message is
// the delivery of a queue_message frame, Text an error frame's message.
type queueWireFrame struct {
	Type    string
	Queue   string
	Code    string
	Message messageJSON
	Text    string
}

func nextQueue(t *testing.T, c *websocket.Conn) queueWireFrame {
	t.Helper()
	var f struct {
		Type     string       `json:"type"`
		Queue    string       `json:"queue"`
		Code     string       `json:"code"`
		Message  string       `json:"message"`
		Delivery *messageJSON `json:"delivery"`
	}
	readFrame(t, c, &f)
	out := queueWireFrame{Type: f.Type, Queue: f.Queue, Code: f.Code, Text: f.Message}
	if f.Delivery != nil {
		out.Message = *f.Delivery
	}
	return out
}

// queueCounts returns the queue's messages and those in flight (leased).
func queueCounts(t *testing.T, e *streamEnv, token, name string) (messages, inFlight uint64) {
	t.Helper()
	var q queueJSON
	mustJSON(t, e.call(t, token, http.MethodGet, "/api/v1/queues/"+name, ""), http.StatusOK, &q)
	return q.Messages, q.InFlight
}

// A consumer on the stream gets its queue's messages pushed in send order,
// never more unacknowledged than its prefetch; each ack lets the next one
// come, a message sent while it waits arrives without a request, and when
// the connection ends the message it held goes back to the queue at once,
// not after its lease.
func TestStream_QueueConsumer(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	alice := e.signUp(t, "alice")
	if w := e.call(t, alice, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`); w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	sendBody := func(body string) {
		t.Helper()
		if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/messages", `{"body":"`+body+`"}`); w.Code != http.StatusCreated {
			t.Fatalf("send = %d %s", w.Code, w.Body)
		}
	}
	for i := range 3 {
		sendBody(fmt.Sprintf("m%d", i))
	}
	c := e.mustDial(t, "", "Authorization", "Bearer "+alice)
	send(t, c, `{"type":"subscribe","queue":{"id":"c1","name":"jobs","prefetch":1,"ack_timeout_ms":60000}}`)
	if f := nextQueue(t, c); f.Type != stream.TypeQueueReady || f.Queue != "c1" {
		t.Fatalf("first frame = %+v, want queue_ready of c1", f)
	}
	for i := range 3 {
		f := nextQueue(t, c)
		if f.Type != stream.TypeQueueMessage || f.Queue != "c1" || f.Message.Body != fmt.Sprintf("m%d", i) || f.Message.Receipt == "" {
			t.Fatalf("frame %d = %+v, want message m%d", i, f, i)
		}
		// Prefetch 1: one leased, the rest waiting, until the ack.
		if msgs, leased := queueCounts(t, e, alice, "jobs"); msgs != uint64(3-i) || leased != 1 {
			t.Fatalf("after delivering m%d: %d messages, %d in flight; want %d and 1", i, msgs, leased, 3-i)
		}
		send(t, c, `{"type":"ack","queue":{"id":"c1"},"receipts":["`+f.Message.Receipt+`"]}`)
	}
	poll.Until(t, 10*time.Second, "the last ack applied", func() error {
		if msgs, leased := queueCounts(t, e, alice, "jobs"); msgs != 0 || leased != 0 {
			return fmt.Errorf("%d messages, %d in flight", msgs, leased)
		}
		return nil
	})

	// Sent while the consumer waits: pushed.
	sendBody("late")
	f := nextQueue(t, c)
	if f.Type != stream.TypeQueueMessage || f.Message.Body != "late" {
		t.Fatalf("frame = %+v, want the late message", f)
	}

	// An unknown receipt is refused on the consumer's error frame; the
	// consumer goes on.
	send(t, c, `{"type":"ack","queue":{"id":"c1"},"receipts":["nonsense"]}`)
	if f := nextQueue(t, c); f.Type != "error" || f.Queue != "c1" || f.Code != "conflict" {
		t.Fatalf("frame = %+v, want conflict for the unknown receipt", f)
	}

	// The connection ends holding "late": it is back at once (its lease
	// was a minute), delivered a second time.
	c.Close(websocket.StatusNormalClosure, "")
	var got messageJSON
	poll.Until(t, 10*time.Second, "the held message back in the queue", func() error {
		w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/receive", `{}`)
		if w.Code != http.StatusOK {
			return fmt.Errorf("receive = %d %s", w.Code, w.Body)
		}
		mustJSON(t, w, http.StatusOK, &got)
		return nil
	})
	if got.Body != "late" || got.Deliveries != 2 {
		t.Fatalf("received %+v, want late, delivered twice", got)
	}
}

// A consumer with a larger prefetch holds that many messages at once, and
// unsubscribing returns those it holds.
func TestStream_QueueConsumerPrefetchAndUnsubscribe(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	alice := e.signUp(t, "alice")
	if w := e.call(t, alice, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`); w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	for i := range 5 {
		if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/messages", fmt.Sprintf(`{"body":"m%d"}`, i)); w.Code != http.StatusCreated {
			t.Fatalf("send = %d %s", w.Code, w.Body)
		}
	}
	c := e.mustDial(t, "", "Authorization", "Bearer "+alice)
	send(t, c, `{"type":"subscribe","queue":{"name":"jobs","prefetch":3,"ack_timeout_ms":60000}}`)
	if f := nextQueue(t, c); f.Type != stream.TypeQueueReady || f.Queue != "jobs" {
		t.Fatalf("first frame = %+v, want queue_ready named by the queue", f)
	}
	for i := range 3 {
		if f := nextQueue(t, c); f.Type != stream.TypeQueueMessage || f.Message.Body != fmt.Sprintf("m%d", i) {
			t.Fatalf("frame %d = %+v", i, f)
		}
	}
	if msgs, leased := queueCounts(t, e, alice, "jobs"); msgs != 5 || leased != 3 {
		t.Fatalf("%d messages, %d in flight; want 5 and 3 (prefetch 3)", msgs, leased)
	}
	// The connection's consumers hold at most 100 messages in all.
	send(t, c, `{"type":"subscribe","queue":{"id":"big","name":"jobs","prefetch":98}}`)
	if f := nextQueue(t, c); f.Type != "error" || f.Queue != "big" || f.Code != "invalid" || !strings.Contains(f.Text, "101") {
		t.Fatalf("frame = %+v, want invalid naming 101 held in all", f)
	}
	send(t, c, `{"type":"unsubscribe","queue":{"id":"jobs"}}`)
	poll.Until(t, 10*time.Second, "the held messages returned", func() error {
		if msgs, leased := queueCounts(t, e, alice, "jobs"); msgs != 5 || leased != 0 {
			return fmt.Errorf("%d messages, %d in flight", msgs, leased)
		}
		return nil
	})
}

// Bad consumer frames get an error frame naming the problem and start
// nothing; a token without write on the queue is refused.
func TestStream_QueueConsumerRefusals(t *testing.T) {
	e := newStreamEnv(t, stream.Config{})
	alice := e.signUp(t, "alice")
	for _, q := range []string{"jobs", "other"} {
		if w := e.call(t, alice, http.MethodPost, "/api/v1/queues", `{"name":"`+q+`"}`); w.Code != http.StatusCreated {
			t.Fatalf("create = %d %s", w.Code, w.Body)
		}
		if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/"+q+"/messages", `{"body":"x"}`); w.Code != http.StatusCreated {
			t.Fatalf("send = %d %s", w.Code, w.Body)
		}
	}
	c := e.mustDial(t, "", "Authorization", "Bearer "+alice)
	for _, tc := range []struct{ frame, code, queue string }{
		{`{"type":"subscribe","queue":{"id":"c","name":"jobs","prefetch":101}}`, "invalid", ""},
		{`{"type":"subscribe","queue":{"id":"c"}}`, "invalid", ""},
		{`{"type":"subscribe","queue":{"id":"c","name":"jobs","ack_timeout_ms":-1}}`, "invalid", ""},
		{`{"type":"ack","receipts":["x"]}`, "invalid", ""},
		{`{"type":"ack","queue":{"id":"c"}}`, "invalid", ""},
		{`{"type":"subscribe","room":"r","queue":{"name":"jobs"}}`, "invalid", ""},
		{`{"type":"ack","queue":{"id":"nobody"},"receipts":["x"]}`, "not_found", "nobody"},
		{`{"type":"subscribe","queue":{"id":"c","name":"missing"}}`, "not_found", "c"},
	} {
		send(t, c, tc.frame)
		if f := nextQueue(t, c); f.Type != "error" || f.Code != tc.code || f.Queue != tc.queue {
			t.Fatalf("%s: frame = %+v, want %s error for %q", tc.frame, f, tc.code, tc.queue)
		}
	}
	if msgs, leased := queueCounts(t, e, alice, "jobs"); msgs != 1 || leased != 0 {
		t.Fatalf("after refused frames: %d messages, %d in flight; want 1 and 0", msgs, leased)
	}

	read := mustAPIToken(t, e.fullEnv, alice, `{"name":"r","scopes":["read"]}`)
	narrow := mustAPIToken(t, e.fullEnv, alice, `{"name":"n","scopes":["write:queue/other"]}`)
	for _, tok := range []string{read.Token, narrow.Token} {
		c := e.mustDial(t, "", "Authorization", "Bearer "+tok)
		send(t, c, `{"type":"subscribe","queue":{"id":"c","name":"jobs"}}`)
		if f := nextQueue(t, c); f.Type != "error" || f.Code != "forbidden" || f.Queue != "c" {
			t.Fatalf("frame = %+v, want forbidden", f)
		}
	}
	// The narrowed token may consume the queue it names.
	cn := e.mustDial(t, "", "Authorization", "Bearer "+narrow.Token)
	send(t, cn, `{"type":"subscribe","queue":{"id":"c","name":"other"}}`)
	if f := nextQueue(t, cn); f.Type != stream.TypeQueueReady {
		t.Fatalf("frame = %+v, want queue_ready", f)
	}
	if f := nextQueue(t, cn); f.Type != stream.TypeQueueMessage || f.Message.Body != "x" {
		t.Fatalf("frame = %+v, want other's message", f)
	}
}

// A consumer's node leases each message for ConsumerLease at a time and
// renews it while the consumer runs: a message held past many such leases
// is delivered to nobody else and can still be acknowledged, the delivery
// names the consumer's own ack deadline, and once that deadline passes the
// lease is no longer renewed and the message comes back.
func TestStream_QueueConsumerLeaseRenewedUpToAckTimeout(t *testing.T) {
	const lease, ackTimeout = time.Second, 5 * time.Second
	e := newStreamEnvWith(t, stream.Config{}, envOptions{cfg: Config{ConsumerLease: lease}})
	// The queues' clock (frozen in these tests) keeps pace with this one,
	// so that leases lapse as they would.
	ticking, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticking)
		for last := time.Now(); ; {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			now := time.Now()
			e.QueueRep.Advance(now.Sub(last).Truncate(time.Millisecond))
			last = last.Add(now.Sub(last).Truncate(time.Millisecond))
		}
	}()
	defer func() { close(stop); <-ticking }()
	alice := e.signUp(t, "alice")
	if w := e.call(t, alice, http.MethodPost, "/api/v1/queues", `{"name":"jobs"}`); w.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", w.Code, w.Body)
	}
	for _, body := range []string{"kept", "dropped"} {
		if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/messages", `{"body":"`+body+`"}`); w.Code != http.StatusCreated {
			t.Fatalf("send = %d %s", w.Code, w.Body)
		}
	}
	c := e.mustDial(t, "", "Authorization", "Bearer "+alice)
	subscribed, queueClock := time.Now(), e.QueueRep.Now()
	send(t, c, fmt.Sprintf(`{"type":"subscribe","queue":{"id":"c1","name":"jobs","prefetch":2,"ack_timeout_ms":%d}}`, ackTimeout.Milliseconds()))
	if f := nextQueue(t, c); f.Type != stream.TypeQueueReady {
		t.Fatalf("first frame = %+v, want queue_ready", f)
	}
	held := map[string]messageJSON{}
	for range 2 {
		f := nextQueue(t, c)
		if f.Type != stream.TypeQueueMessage {
			t.Fatalf("frame = %+v, want a message", f)
		}
		held[f.Message.Body] = f.Message
		if until := time.UnixMilli(f.Message.LeaseExpiresAt).Sub(queueClock); until < ackTimeout-time.Second || until > ackTimeout+time.Second {
			t.Fatalf("%s: lease_expires_at %v after subscribing, want about the ack timeout (%v), not the node's lease", f.Message.Body, until, ackTimeout)
		}
	}
	// Three leases later, nobody else can take either message.
	for end := time.Now().Add(3 * lease); time.Now().Before(end); time.Sleep(lease / 4) {
		if w := e.call(t, alice, http.MethodPost, "/api/v1/queues/jobs/receive", `{}`); w.Code != http.StatusNoContent {
			t.Fatalf("receive while the consumer holds both = %d %s, want 204", w.Code, w.Body)
		}
	}
	send(t, c, `{"type":"ack","queue":{"id":"c1"},"receipts":["`+held["kept"].Receipt+`"]}`)
	poll.Until(t, 10*time.Second, "kept acknowledged", func() error {
		if msgs, leased := queueCounts(t, e, alice, "jobs"); msgs != 1 || leased != 1 {
			return fmt.Errorf("%d messages, %d in flight; want 1 and 1", msgs, leased)
		}
		return nil
	})
	// "dropped" is not acknowledged: past its ack deadline it comes back,
	// and the consumer, with room again, takes it a second time.
	f := nextQueue(t, c)
	if f.Type != stream.TypeQueueMessage || f.Message.Body != "dropped" || f.Message.Deliveries != 2 {
		t.Fatalf("frame = %+v, want dropped delivered a second time", f)
	}
	if back := time.Since(subscribed); back < ackTimeout {
		t.Fatalf("dropped came back %v after subscribing, before its ack timeout %v", back, ackTimeout)
	}
	if msgs, leased := queueCounts(t, e, alice, "jobs"); msgs != 1 || leased != 1 {
		t.Fatalf("%d messages, %d in flight; want 1 and 1", msgs, leased)
	}
}
