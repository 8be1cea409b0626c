package client_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
)

// moveAll runs the queues' background work (the partition leaders' job in
// a cluster) on every partition.
func (s *fullServer) moveAll(t *testing.T) {
	t.Helper()
	for range 3 {
		for _, p := range s.QueueRep.Partitions() {
			if _, err := s.Queues.Maintain(context.Background(), p); err != nil {
				t.Fatalf("Maintain(%d): %v", p, err)
			}
		}
	}
}

func mustGetQueue(t *testing.T, c *client.Client, name string) client.Queue {
	t.Helper()
	q, err := c.GetQueue(context.Background(), name)
	if err != nil {
		t.Fatalf("GetQueue(%q): %v", name, err)
	}
	return q
}

func bodiesOf(msgs []client.QueueMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Body
	}
	return out
}

func TestClientAPI_QueueSettings(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann, ben := s.user(t, "ann"), s.user(t, "ben")
	_, err := ann.CreateQueueWith(ctx, "jobs", client.QueueSettings{DeadLetter: ptr("dlq")})
	mustAPIError(t, err, 400, "invalid") // dlq does not exist yet
	if _, err := ann.CreateQueue(ctx, "dlq"); err != nil {
		t.Fatal(err)
	}
	q, err := ann.CreateQueueWith(ctx, "jobs", client.QueueSettings{DeadLetter: ptr("dlq"), MaxDeliveries: ptr(uint64(3)), Overflow: ptr("drop_oldest")})
	if err != nil || q.DeadLetter != "dlq" || q.MaxDeliveries != 3 || q.Overflow != "drop_oldest" {
		t.Fatalf("create with settings = %+v, %v", q, err)
	}
	if d := mustGetQueue(t, ann, "dlq"); d.MaxDeliveries != 20 || d.Overflow != "reject" || d.DeadLetter != "" {
		t.Fatalf("default settings = %+v", d)
	}
	for _, bad := range []client.QueueSettings{
		{Overflow: ptr("sometimes")},
		{DeadLetter: ptr("jobs")},
		{DeadLetter: ptr("missing")},
		{TTLMs: ptr(int64(-1))},
		{},
	} {
		_, err := ann.ConfigureQueue(ctx, "jobs", bad)
		mustAPIError(t, err, 400, "invalid")
	}
	_, err = ben.ConfigureQueue(ctx, "jobs", client.QueueSettings{MaxLength: ptr(uint64(1))})
	mustAPIError(t, err, 403, "forbidden")
	_, err = ann.ConfigureQueue(ctx, "nope", client.QueueSettings{MaxLength: ptr(uint64(1))})
	mustAPIError(t, err, 404, "not_found")
	if q := mustGetQueue(t, ben, "jobs"); q.MaxDeliveries != 3 || q.MaxLength != 0 || q.DeadLetter != "dlq" {
		t.Fatalf("refused changes changed the queue: %+v", q)
	}
	set, err := ann.ConfigureQueue(ctx, "jobs", client.QueueSettings{MaxLength: ptr(uint64(5)), TTLMs: ptr(int64(60_000)), DeadLetter: ptr("")})
	if err != nil || set.MaxLength != 5 || set.TTLMs != 60_000 || set.DeadLetter != "" || set.MaxDeliveries != 3 {
		t.Fatalf("configure = %+v, %v", set, err)
	}
	_, err = ann.GetQueue(ctx, "nope")
	mustAPIError(t, err, 404, "not_found")
}

func TestClientAPI_QueueDeadLetters(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann, ben := s.user(t, "ann"), s.user(t, "ben")
	if _, err := ann.CreateQueue(ctx, "dlq"); err != nil {
		t.Fatal(err)
	}
	if _, err := ann.CreateQueueWith(ctx, "jobs", client.QueueSettings{DeadLetter: ptr("dlq"), MaxDeliveries: ptr(uint64(2))}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"lapses", "rejected"} {
		if _, err := ann.Send(ctx, "jobs", b, client.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lease := client.ReceiveOptions{AckTimeout: time.Second}
	m, _, err := ben.Receive(ctx, "jobs", lease)
	if err != nil || m.Body != "lapses" {
		t.Fatalf("receive = %+v, %v", m, err)
	}
	mustAPIError(t, ann.Nack(ctx, "jobs", m.Receipt, client.NackOptions{}), 409, "conflict") // not ann's lease
	mustAPIError(t, ben.Nack(ctx, "jobs", "", client.NackOptions{}), 400, "invalid")
	mustAPIError(t, ben.Nack(ctx, "jobs", m.Receipt, client.NackOptions{Reason: "bad\u202e"}), 400, "invalid")
	if err := ben.Nack(ctx, "jobs", m.Receipt, client.NackOptions{Reason: "try later"}); err != nil {
		t.Fatal(err)
	}
	m, _, _ = ben.Receive(ctx, "jobs", lease) // the second delivery of "lapses"
	r, _, _ := ben.Receive(ctx, "jobs", lease)
	if m.Body != "lapses" || m.Deliveries != 2 || r.Body != "rejected" {
		t.Fatalf("receives = %+v, %+v", m, r)
	}
	if err := ben.Nack(ctx, "jobs", r.Receipt, client.NackOptions{Dead: true, Reason: "cannot parse"}); err != nil {
		t.Fatal(err)
	}
	s.QueueRep.Advance(2 * time.Second) // "lapses" lapses a second time: dead
	s.moveAll(t)
	if st := mustGetQueue(t, ann, "jobs").Stats; st.DeadLettered != 2 || st.Ready+st.Leased != 0 || st.Moving != 0 {
		t.Fatalf("jobs stats = %+v", st)
	}
	if st := mustGetQueue(t, ann, "dlq").Stats; st.DeadLetters != 2 || st.Ready != 2 {
		t.Fatalf("dlq stats = %+v", st)
	}
	dead, err := ann.Browse(ctx, "dlq", 0, 0)
	if err != nil || !slices.Equal(bodiesOf(dead), []string{"rejected", "lapses"}) {
		t.Fatalf("browse = %+v, %v", dead, err)
	}
	if d := dead[0]; d.Origin != "jobs" || d.DeadReason != "rejected" || d.LastReason != "cannot parse" || d.State != "ready" {
		t.Fatalf("rejected dead letter = %+v", d)
	}
	if d := dead[1]; d.DeadReason != "delivery_limit" || d.LastReason != "try later" || d.Deliveries != 2 {
		t.Fatalf("lapsed dead letter = %+v", d)
	}
	_, err = ann.Browse(ctx, "dlq", 0, 501)
	mustAPIError(t, err, 400, "invalid")
	_, err = ann.Browse(ctx, "nope", 0, 0)
	mustAPIError(t, err, 404, "not_found")

	_, _, err = ben.Redrive(ctx, "dlq", 0, "")
	mustAPIError(t, err, 403, "forbidden")
	_, _, err = ann.Redrive(ctx, "dlq", 1001, "")
	mustAPIError(t, err, 400, "invalid")
	_, _, err = ann.Redrive(ctx, "dlq", 0, "dlq")
	mustAPIError(t, err, 400, "invalid")
	moved, more, err := ann.Redrive(ctx, "dlq", 0, "")
	if err != nil || moved != 2 || more {
		t.Fatalf("redrive = %d, %v, %v", moved, more, err)
	}
	s.moveAll(t)
	back, err := ben.ReceiveMany(ctx, "jobs", 10, client.ReceiveOptions{})
	if err != nil || !slices.Equal(bodiesOf(back), []string{"rejected", "lapses"}) || back[0].Origin != "" {
		t.Fatalf("redriven = %+v, %v", back, err)
	}
}

func TestClientAPI_QueueNackExtendPurge(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann, ben := s.user(t, "ann"), s.user(t, "ben")
	if _, err := ann.CreateQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := ann.Send(ctx, "q", "x", client.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	m, _, err := ben.Receive(ctx, "q", client.ReceiveOptions{AckTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	until, err := ben.Extend(ctx, "q", m.Receipt, time.Minute)
	if err != nil || until != s.QueueRep.Now().Add(time.Minute).UnixMilli() {
		t.Fatalf("extend = %d, %v", until, err)
	}
	_, err = ben.Extend(ctx, "q", m.Receipt, 0)
	mustAPIError(t, err, 400, "invalid")
	_, err = ann.Extend(ctx, "q", m.Receipt, time.Minute)
	mustAPIError(t, err, 409, "conflict")
	s.QueueRep.Advance(30 * time.Second)
	if err := ben.Nack(ctx, "q", m.Receipt, client.NackOptions{Delay: 10 * time.Second}); err != nil {
		t.Fatalf("nack within the extended lease: %v", err)
	}
	if _, found, _ := ben.Receive(ctx, "q", client.ReceiveOptions{}); found {
		t.Fatal("a message nacked with a delay came back at once")
	}
	if st := mustGetQueue(t, ann, "q").Stats; st.Delayed != 1 {
		t.Fatalf("stats = %+v", st)
	}
	s.QueueRep.Advance(11 * time.Second)
	m, _, _ = ben.Receive(ctx, "q", client.ReceiveOptions{AckTimeout: time.Second})
	s.QueueRep.Advance(2 * time.Second)
	_, err = ben.Extend(ctx, "q", m.Receipt, time.Minute)
	mustAPIError(t, err, 409, "conflict") // lapsed
	mustAPIError(t, ben.Nack(ctx, "q", m.Receipt, client.NackOptions{}), 409, "conflict")

	_, err = ben.Purge(ctx, "q")
	mustAPIError(t, err, 403, "forbidden")
	_, err = ann.Purge(ctx, "nope")
	mustAPIError(t, err, 404, "not_found")
	if n, err := ann.Purge(ctx, "q"); err != nil || n != 1 {
		t.Fatalf("purge = %d, %v", n, err)
	}
	if q := mustGetQueue(t, ann, "q"); q.Messages != 0 || q.Stats != (client.QueueStats{}) {
		t.Fatalf("after purge = %+v", q)
	}
}

func TestClientAPI_QueueSendOptions(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann, ben := s.user(t, "ann"), s.user(t, "ben")
	if _, err := ann.CreateQueueWith(ctx, "q", client.QueueSettings{MaxLength: ptr(uint64(8))}); err != nil {
		t.Fatal(err)
	}
	ids, ts, err := ann.SendBatch(ctx, "q", []client.BatchMessage{
		{Body: "low"},
		{Body: "high", SendOptions: client.SendOptions{Priority: 9}},
		{Body: "g1", SendOptions: client.SendOptions{Group: "g"}},
		{Body: "g2", SendOptions: client.SendOptions{Group: "g"}},
		{Body: "later", SendOptions: client.SendOptions{Delay: time.Second}},
		{Body: "at", SendOptions: client.SendOptions{DeliverAt: s.QueueRep.Now().Add(2 * time.Second)}},
		{Body: "brief", SendOptions: client.SendOptions{TTL: 500 * time.Millisecond}},
	})
	if err != nil || !slices.Equal(ids, []uint64{1, 2, 3, 4, 5, 6, 7}) || ts == 0 {
		t.Fatalf("batch = %v, %d, %v", ids, ts, err)
	}
	for _, bad := range [][]client.BatchMessage{
		nil,
		make([]client.BatchMessage, 101),
		{{Body: "ok"}, {Body: ""}},
		{{Body: "x", SendOptions: client.SendOptions{Priority: 10}}},
		{{Body: "x", SendOptions: client.SendOptions{Group: "a b"}}},
		{{Body: "x", SendOptions: client.SendOptions{Delay: time.Second, DeliverAt: time.Now()}}},
	} {
		_, _, err := ann.SendBatch(ctx, "q", bad)
		mustAPIError(t, err, 400, "invalid")
	}
	_, _, err = ann.SendBatch(ctx, "q", []client.BatchMessage{{Body: "1"}, {Body: "2"}})
	e := mustAPIError(t, err, 409, "conflict") // 7 of 8: no room for two
	if !strings.Contains(e.Message, "full") {
		t.Fatalf("full queue message %q", e.Message)
	}
	_, err = ann.Send(ctx, "q", "x", client.SendOptions{Priority: -1})
	mustAPIError(t, err, 400, "invalid")
	if q := mustGetQueue(t, ann, "q"); q.LastID != 7 || q.Stats.Delayed != 2 || q.Stats.Ready != 4 || q.Stats.Waiting != 1 || q.Stats.OldestAt == 0 {
		t.Fatalf("queue after refusals = %+v", q)
	}
	s.QueueRep.Advance(500 * time.Millisecond) // "brief" expires
	got, err := ben.ReceiveMany(ctx, "q", 100, client.ReceiveOptions{AckTimeout: time.Minute})
	if err != nil || !slices.Equal(bodiesOf(got), []string{"high", "low", "g1"}) || got[0].Priority != 9 || got[2].Group != "g" {
		t.Fatalf("first receive = %q, %v", bodiesOf(got), err)
	}
	if err := ben.Ack(ctx, "q", got[2].Receipt); err != nil {
		t.Fatal(err)
	}
	s.QueueRep.Advance(2 * time.Second)
	got, err = ben.ReceiveMany(ctx, "q", 100, client.ReceiveOptions{})
	if err != nil || !slices.Equal(bodiesOf(got), []string{"g2", "later", "at"}) {
		t.Fatalf("second receive = %q, %v", bodiesOf(got), err)
	}
	if got, err = ben.ReceiveMany(ctx, "q", 5, client.ReceiveOptions{}); err != nil || len(got) != 0 {
		t.Fatalf("empty receive = %+v, %v", got, err)
	}
	_, err = ben.ReceiveMany(ctx, "q", 101, client.ReceiveOptions{})
	mustAPIError(t, err, 400, "invalid")
	if st := mustGetQueue(t, ann, "q").Stats; st.Expired != 1 || st.Dropped != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// A consumer acks each message as it asks for the next: one call per
// message, all-or-none acks, a clear 409 naming a lapsed or unknown one.
func TestClientAPI_QueueReceiveAcks(t *testing.T) {
	ctx := context.Background()
	s := newFullServer(t)
	ann, ben := s.user(t, "ann"), s.user(t, "ben")
	if _, err := ann.CreateQueue(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"a", "b", "c"} {
		if _, err := ann.Send(ctx, "jobs", b, client.SendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lease := client.ReceiveOptions{AckTimeout: time.Minute}
	m, found, err := ben.Receive(ctx, "jobs", lease)
	if err != nil || !found || m.Body != "a" {
		t.Fatalf("first receive = %+v, %v, %v", m, found, err)
	}
	var got []string
	for {
		o := lease
		o.Ack = []string{m.Receipt}
		next, found, err := ben.Receive(ctx, "jobs", o)
		if err != nil {
			t.Fatalf("receive acking %q: %v", m.Body, err)
		}
		got = append(got, m.Body)
		if !found {
			break
		}
		m = next
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("consumed %q, want a b c", got)
	}
	if q := mustGetQueue(t, ann, "jobs"); q.Stats.Ready != 0 || q.Stats.Leased != 0 {
		t.Fatalf("queue after acking everything on receive: %+v", q.Stats)
	}

	if _, err := ann.Send(ctx, "jobs", "d", client.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	d, _, err := ben.Receive(ctx, "jobs", lease)
	if err != nil {
		t.Fatal(err)
	}
	o := lease
	o.Ack = []string{d.Receipt, m.Receipt} // m was acknowledged above
	_, _, err = ben.Receive(ctx, "jobs", o)
	if e := mustAPIError(t, err, 409, "conflict"); !strings.Contains(e.Message, m.Receipt) {
		t.Fatalf("409 %q does not name the receipt %s", e.Message, m.Receipt)
	}
	_, err = ben.ReceiveMany(ctx, "jobs", 2, client.ReceiveOptions{Ack: []string{d.Receipt, d.Receipt}})
	mustAPIError(t, err, 400, "invalid")
	_, _, err = ann.Receive(ctx, "jobs", client.ReceiveOptions{Ack: []string{d.Receipt}})
	mustAPIError(t, err, 409, "conflict") // ben's lease
	if err := ben.Ack(ctx, "jobs", d.Receipt); err != nil {
		t.Fatalf("d stays leased after the refused receives: %v", err)
	}
}
