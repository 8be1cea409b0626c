package queue_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/queue"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// maintainAll runs the background work of every partition, as the node's
// leaders do, until nothing is left to move.
func maintainAll(t *testing.T, s *queue.Service, r *statetest.Replicator) {
	t.Helper()
	for range 4 {
		var moved uint64
		for _, p := range r.Partitions() {
			w, err := s.Maintain(context.Background(), p)
			if err != nil {
				t.Fatalf("Maintain(%d): %v", p, err)
			}
			moved += w.Moved
		}
		if moved == 0 {
			return
		}
	}
}

func mustConfigure(t *testing.T, s *queue.Service, user, name string, u queue.SettingsUpdate) {
	t.Helper()
	if _, err := s.Configure(context.Background(), user, name, u, ""); err != nil {
		t.Fatalf("Configure(%q): %v", name, err)
	}
}

func mustInfo(t *testing.T, s *queue.Service, name string) queue.QueueInfo {
	t.Helper()
	info, _, err := s.Info(context.Background(), name, false)
	if err != nil {
		t.Fatalf("Info(%q): %v", name, err)
	}
	return info
}

func mustSendWith(t *testing.T, s *queue.Service, name string, m queue.OutMessage) uint64 {
	t.Helper()
	ids, _, err := s.SendMessages(context.Background(), "alice", name, []queue.OutMessage{m}, "")
	if err != nil {
		t.Fatalf("SendMessages to %q: %v", name, err)
	}
	return ids[0]
}

// receiveBodies receives (leased for a minute) until nothing is left and
// returns the bodies in order.
func receiveBodies(t *testing.T, s *queue.Service, user, name string) []string {
	t.Helper()
	var got []string
	for {
		msg, found, err := s.Receive(context.Background(), user, name, queue.ReceiveOptions{}, "")
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return got
		}
		got = append(got, string(msg.Body))
	}
}

func nothingFor(t *testing.T, s *queue.Service, user, name string) {
	t.Helper()
	if msg, found, err := s.Receive(context.Background(), user, name, queue.ReceiveOptions{AckTimeout: time.Minute}, ""); err != nil || found {
		t.Fatalf("Receive from %q = (%+v, %v, %v), want nothing", name, msg, found, err)
	}
}

// withDLQ makes queues "jobs" and "dlq" (on different partitions of r, or
// the same: it tries both) with jobs dead-lettering to dlq after max
// deliveries.
func withDLQ(t *testing.T, maxDeliveries uint64) (*queue.Service, *statetest.Replicator) {
	t.Helper()
	s, r := newService(t, 4, queue.Config{IsAdmin: func(_ context.Context, u string) (bool, error) { return u == "root", nil }})
	mustCreate(t, s, "alice", "dlq")
	_, err := s.CreateWith(context.Background(), "alice", "jobs", queue.SettingsUpdate{
		Set:      queue.SetMaxDeliveries | queue.SetDeadLetter,
		Settings: queue.Settings{MaxDeliveries: maxDeliveries, DeadLetter: "dlq"},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

func TestService_DeadLetter_DeliveryLimit(t *testing.T) {
	ctx := context.Background()
	s, r := withDLQ(t, 2)
	id := mustSend(t, s, "alice", "jobs", "", "poison")
	for range 2 {
		mustReceive(t, s, "bob", "jobs", queue.ReceiveOptions{AckTimeout: 10 * time.Millisecond})
		r.Advance(11 * time.Millisecond)
	}
	nothingFor(t, s, "bob", "jobs") // its second lease lapsed: it is dead
	if st := mustInfo(t, s, "jobs").Stats; st.DeadLettered != 1 || st.Moving != 1 || st.Ready+st.Leased != 0 {
		t.Fatalf("jobs stats before the move = %+v", st)
	}
	maintainAll(t, s, r)
	maintainAll(t, s, r) // a second round moves nothing twice
	dead := mustReceive(t, s, "carol", "dlq", queue.ReceiveOptions{AckTimeout: time.Minute})
	if string(dead.Body) != "poison" || dead.Origin != "jobs" || dead.DeadReason != "delivery_limit" || dead.Deliveries != 3 || dead.Sender != "alice" {
		t.Fatalf("dead letter = %+v (sent as %d)", dead, id)
	}
	if err := s.Ack(ctx, "carol", "dlq", dead.Receipt, ""); err != nil {
		t.Fatal(err)
	}
	nothingFor(t, s, "carol", "dlq")
	if st := mustInfo(t, s, "jobs").Stats; st.Moving != 0 || st.DeadLettered != 1 {
		t.Fatalf("jobs stats after the move = %+v", st)
	}
}

func TestService_Nack(t *testing.T) {
	ctx := context.Background()
	s, r := withDLQ(t, 5)
	mustSend(t, s, "alice", "jobs", "", "one")
	mustSend(t, s, "alice", "jobs", "", "two")
	lease := queue.ReceiveOptions{AckTimeout: time.Minute}
	m1 := mustReceive(t, s, "bob", "jobs", lease)

	t.Run("bad input changes nothing", func(t *testing.T) {
		wantCode(t, s.Nack(ctx, "bob", "jobs", "", queue.NackOptions{}, ""), errs.Invalid)
		wantCode(t, s.Nack(ctx, "bob", "jobs", m1.Receipt, queue.NackOptions{Reason: "bad\x1b[2J"}, ""), errs.Invalid)
		wantCode(t, s.Nack(ctx, "bob", "jobs", m1.Receipt, queue.NackOptions{Reason: strings.Repeat("r", queue.MaxReasonLen+1)}, ""), errs.Invalid)
		wantCode(t, s.Nack(ctx, "bob", "jobs", m1.Receipt, queue.NackOptions{Delay: -time.Second}, ""), errs.Invalid)
		wantCode(t, s.Nack(ctx, "carol", "jobs", m1.Receipt, queue.NackOptions{}, ""), errs.Conflict)
		wantCode(t, s.Nack(ctx, "bob", "nope", m1.Receipt, queue.NackOptions{}, ""), errs.NotFound)
		wantCode(t, s.Nack(ctx, "bob", "jobs", "not-a-receipt", queue.NackOptions{}, ""), errs.Conflict)
		if st := mustInfo(t, s, "jobs").Stats; st.Leased != 1 || st.Ready != 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
	t.Run("now: back at its position", func(t *testing.T) {
		if err := s.Nack(ctx, "bob", "jobs", m1.Receipt, queue.NackOptions{Reason: "busy"}, ""); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.Ack(ctx, "bob", "jobs", m1.Receipt, ""), errs.Conflict)
		again := mustReceive(t, s, "bob", "jobs", lease)
		if again.ID != m1.ID || again.Deliveries != 2 {
			t.Fatalf("after nack got %+v, want message %d delivered twice", again, m1.ID)
		}
		m1 = again
	})
	t.Run("after a delay", func(t *testing.T) {
		if err := s.Nack(ctx, "bob", "jobs", m1.Receipt, queue.NackOptions{Delay: 100 * time.Millisecond}, ""); err != nil {
			t.Fatal(err)
		}
		if got := mustReceive(t, s, "bob", "jobs", lease); string(got.Body) != "two" {
			t.Fatalf("during the delay got %q, want two", got.Body)
		}
		nothingFor(t, s, "bob", "jobs")
		if st := mustInfo(t, s, "jobs").Stats; st.Delayed != 1 {
			t.Fatalf("stats = %+v, want 1 delayed", st)
		}
		r.Advance(101 * time.Millisecond)
		m1 = mustReceive(t, s, "bob", "jobs", lease)
		if m1.Deliveries != 3 {
			t.Fatalf("after the delay got %+v", m1)
		}
	})
	t.Run("dead", func(t *testing.T) {
		if err := s.Nack(ctx, "bob", "jobs", m1.Receipt, queue.NackOptions{Dead: true, Reason: "cannot parse"}, ""); err != nil {
			t.Fatal(err)
		}
		maintainAll(t, s, r)
		dead := mustReceive(t, s, "carol", "dlq", lease)
		if string(dead.Body) != "one" || dead.DeadReason != "rejected" || dead.LastReason != "cannot parse" || dead.Origin != "jobs" {
			t.Fatalf("dead letter = %+v", dead)
		}
	})
}

func TestService_Extend(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 2, queue.Config{})
	mustCreate(t, s, "alice", "q")
	mustSend(t, s, "alice", "q", "", "x")
	m := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{AckTimeout: 100 * time.Millisecond})
	_, err := s.Extend(ctx, "bob", "q", m.Receipt, 0, "")
	wantCode(t, err, errs.Invalid)
	_, err = s.Extend(ctx, "carol", "q", m.Receipt, time.Second, "")
	wantCode(t, err, errs.Conflict)
	r.Advance(50 * time.Millisecond)
	until, err := s.Extend(ctx, "bob", "q", m.Receipt, time.Second, "")
	if want := r.Now().Add(time.Second).UnixMilli(); err != nil || until != want {
		t.Fatalf("Extend = (%d, %v), want %d", until, err, want)
	}
	r.Advance(500 * time.Millisecond) // past the first lease, within the extended one
	nothingFor(t, s, "carol", "q")
	if err := s.Ack(ctx, "bob", "q", m.Receipt, ""); err != nil {
		t.Fatalf("Ack within the extended lease: %v", err)
	}
	mustSend(t, s, "alice", "q", "", "y")
	m = mustReceive(t, s, "bob", "q", queue.ReceiveOptions{AckTimeout: 10 * time.Millisecond})
	r.Advance(11 * time.Millisecond)
	_, err = s.Extend(ctx, "bob", "q", m.Receipt, time.Second, "")
	wantCode(t, err, errs.Conflict) // lapsed: 409
}

func TestService_Delayed(t *testing.T) {
	ctx := context.Background()
	s, r := newService(t, 2, queue.Config{})
	mustCreate(t, s, "alice", "q")
	mustSendWith(t, s, "q", queue.OutMessage{Body: []byte("later"), Delay: 100 * time.Millisecond})
	at := r.Now().Add(200 * time.Millisecond).UnixMilli()
	mustSendWith(t, s, "q", queue.OutMessage{Body: []byte("at"), DeliverAtMs: at})
	mustSendWith(t, s, "q", queue.OutMessage{Body: []byte("past"), DeliverAtMs: r.Now().Add(-time.Hour).UnixMilli()})
	if got := receiveBodies(t, s, "bob", "q"); !slices.Equal(got, []string{"past"}) {
		t.Fatalf("before any delay ended got %q", got)
	}
	if _, found, _, _ := s.Peek(ctx, "bob", "q", "", false); found {
		t.Fatal("Peek shows a delayed message")
	}
	if st := mustInfo(t, s, "q").Stats; st.Delayed != 2 {
		t.Fatalf("stats = %+v, want 2 delayed", st)
	}
	r.Advance(100 * time.Millisecond)
	nothingFor(t, s, "bob", "q") // due only once the leader's time is past it
	r.Advance(time.Millisecond)
	if got := receiveBodies(t, s, "bob", "q"); !slices.Equal(got, []string{"later"}) {
		t.Fatalf("after 101 ms got %q", got)
	}
	r.Advance(100 * time.Millisecond)
	if got := receiveBodies(t, s, "bob", "q"); !slices.Equal(got, []string{"at"}) {
		t.Fatalf("after deliver_at got %q", got)
	}
	for _, bad := range []queue.OutMessage{
		{Body: []byte("x"), Delay: -1},
		{Body: []byte("x"), Delay: queue.DefaultMaxDelay + time.Millisecond},
		{Body: []byte("x"), Delay: time.Second, DeliverAtMs: at},
		{Body: []byte("x"), DeliverAtMs: r.Now().Add(queue.DefaultMaxDelay + time.Second).UnixMilli()},
	} {
		_, _, err := s.SendMessages(ctx, "alice", "q", []queue.OutMessage{bad}, "")
		wantCode(t, err, errs.Invalid)
	}
	if info := mustInfo(t, s, "q"); info.LastID != 3 {
		t.Fatalf("refused sends changed the queue: %+v", info)
	}
}

// A long poll wakes for a delayed message when its time comes, with no
// command on the queue.
func TestService_Delayed_LongPoll(t *testing.T) {
	s, r := newService(t, 1, queue.Config{PollMin: time.Millisecond, PollMax: 2 * time.Millisecond})
	mustCreate(t, s, "alice", "q")
	mustSendWith(t, s, "q", queue.OutMessage{Body: []byte("x"), Delay: 30 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(20 * time.Millisecond)
		r.Advance(31 * time.Millisecond)
	}()
	m := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{Wait: 10 * time.Second})
	<-done
	if string(m.Body) != "x" {
		t.Fatalf("long poll got %+v", m)
	}
}

func TestService_Priorities(t *testing.T) {
	s, _ := newService(t, 1, queue.Config{})
	mustCreate(t, s, "alice", "q")
	for _, m := range []struct {
		body string
		p    int
	}{{"a0", 0}, {"b5", 5}, {"c5", 5}, {"d9", 9}, {"e0", 0}} {
		mustSendWith(t, s, "q", queue.OutMessage{Body: []byte(m.body), Priority: m.p})
	}
	first := mustReceive(t, s, "bob", "q", queue.ReceiveOptions{AckTimeout: 10 * time.Millisecond})
	if string(first.Body) != "d9" || first.Priority != 9 {
		t.Fatalf("first = %+v", first)
	}
	if got := receiveBodies(t, s, "bob", "q"); !slices.Equal(got, []string{"b5", "c5", "a0", "e0"}) {
		t.Fatalf("order = %q", got)
	}
	_, _, err := s.SendMessages(context.Background(), "alice", "q", []queue.OutMessage{{Body: []byte("x"), Priority: 10}}, "")
	wantCode(t, err, errs.Invalid)
}

func TestService_TTL(t *testing.T) {
	s, r := withDLQ(t, 0)
	mustSendWith(t, s, "jobs", queue.OutMessage{Body: []byte("short"), TTL: 50 * time.Millisecond})
	mustSend(t, s, "alice", "jobs", "", "forever")
	r.Advance(50 * time.Millisecond)
	if got := receiveBodies(t, s, "bob", "jobs"); !slices.Equal(got, []string{"forever"}) {
		t.Fatalf("got %q", got)
	}
	maintainAll(t, s, r)
	if dead := mustReceive(t, s, "bob", "dlq", queue.ReceiveOptions{}); string(dead.Body) != "short" || dead.DeadReason != "expired" {
		t.Fatalf("dead letter = %+v", dead)
	}
	mustConfigure(t, s, "alice", "jobs", queue.SettingsUpdate{Set: queue.SetTTL | queue.SetDeadLetter, Settings: queue.Settings{TTLMs: 20}})
	mustSend(t, s, "alice", "jobs", "", "queue ttl")
	r.Advance(20 * time.Millisecond)
	maintainAll(t, s, r) // ticks expire it without any receive
	if st := mustInfo(t, s, "jobs").Stats; st.Expired != 2 || st.Dropped != 1 || st.Ready != 0 {
		t.Fatalf("stats = %+v, want the second expiry dropped", st)
	}
}

func TestService_MaxLength(t *testing.T) {
	ctx := context.Background()
	s, r := withDLQ(t, 0)
	mustConfigure(t, s, "alice", "jobs", queue.SettingsUpdate{Set: queue.SetMaxLength, Settings: queue.Settings{MaxLength: 2}})
	mustSend(t, s, "alice", "jobs", "", "1")
	mustSend(t, s, "alice", "jobs", "", "2")
	_, _, err := s.Send(ctx, "alice", "jobs", "", []byte("3"), "")
	wantCode(t, err, errs.Conflict)
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("error %v does not say the queue is full", err)
	}
	mustReceive(t, s, "bob", "jobs", queue.ReceiveOptions{AckTimeout: time.Minute}) // leased ones do not count
	_, _, err = s.SendMessages(ctx, "alice", "jobs", []queue.OutMessage{{Body: []byte("3")}, {Body: []byte("4")}}, "")
	wantCode(t, err, errs.Conflict) // all or nothing
	if info := mustInfo(t, s, "jobs"); info.LastID != 2 {
		t.Fatalf("a refused batch changed the queue: %+v", info)
	}
	mustConfigure(t, s, "alice", "jobs", queue.SettingsUpdate{Set: queue.SetOverflow, Settings: queue.Settings{DropOldest: true}})
	mustSend(t, s, "alice", "jobs", "", "3")
	mustSend(t, s, "alice", "jobs", "", "4") // drops 2, the oldest not leased
	maintainAll(t, s, r)
	if dead := mustReceive(t, s, "bob", "dlq", queue.ReceiveOptions{}); string(dead.Body) != "2" || dead.DeadReason != "max_length" {
		t.Fatalf("dead letter = %+v", dead)
	}
	if got := receiveBodies(t, s, "carol", "jobs"); !slices.Equal(got, []string{"3", "4"}) {
		t.Fatalf("left %q", got)
	}
}

func TestService_PurgeConfigure(t *testing.T) {
	ctx := context.Background()
	s, _ := withDLQ(t, 3)
	mustSend(t, s, "alice", "jobs", "", "1")
	mustSendWith(t, s, "jobs", queue.OutMessage{Body: []byte("2"), Delay: time.Hour, Group: "g"})
	m := mustReceive(t, s, "bob", "jobs", queue.ReceiveOptions{AckTimeout: time.Minute})
	_, err := s.Purge(ctx, "bob", "jobs", "")
	wantCode(t, err, errs.Forbidden)
	_, err = s.Configure(ctx, "bob", "jobs", queue.SettingsUpdate{Set: queue.SetMaxLength, Settings: queue.Settings{MaxLength: 1}}, "")
	wantCode(t, err, errs.Forbidden)
	for _, bad := range []queue.SettingsUpdate{
		{},
		{Set: queue.SetDeadLetter, Settings: queue.Settings{DeadLetter: "jobs"}},
		{Set: queue.SetDeadLetter, Settings: queue.Settings{DeadLetter: "missing"}},
		{Set: queue.SetDeadLetter, Settings: queue.Settings{DeadLetter: "a/b"}},
		{Set: queue.SetTTL, Settings: queue.Settings{TTLMs: -1}},
	} {
		_, err := s.Configure(ctx, "alice", "jobs", bad, "")
		wantCode(t, err, errs.Invalid)
	}
	if set := mustInfo(t, s, "jobs").Settings; set.MaxDeliveries != 3 || set.DeadLetter != "dlq" || set.MaxLength != 0 {
		t.Fatalf("refused changes changed the settings: %+v", set)
	}
	if n, err := s.Purge(ctx, "root", "jobs", ""); err != nil || n != 2 {
		t.Fatalf("Purge = (%d, %v), want 2", n, err)
	}
	wantCode(t, s.Ack(ctx, "bob", "jobs", m.Receipt, ""), errs.Conflict)
	if st := mustInfo(t, s, "jobs").Stats; st != (queue.Stats{}) {
		t.Fatalf("stats after purge = %+v", st)
	}
	mustSendWith(t, s, "jobs", queue.OutMessage{Body: []byte("3"), Group: "g"})
	if got := receiveBodies(t, s, "bob", "jobs"); !slices.Equal(got, []string{"3"}) {
		t.Fatalf("after purge got %q", got)
	}
}

func TestService_Batches(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 2, queue.Config{Limits: queue.Limits{MaxBody: 8}})
	mustCreate(t, s, "alice", "q")
	ids, ts, err := s.SendMessages(ctx, "alice", "q", []queue.OutMessage{{Body: []byte("a")}, {Body: []byte("b"), To: "bob"}, {Body: []byte("c")}}, "")
	if err != nil || !slices.Equal(ids, []uint64{1, 2, 3}) || ts == 0 {
		t.Fatalf("batch = (%v, %d, %v)", ids, ts, err)
	}
	_, _, err = s.SendMessages(ctx, "alice", "q", []queue.OutMessage{{Body: []byte("ok")}, {Body: []byte("123456789")}}, "")
	wantCode(t, err, errs.TooLarge)
	if !strings.Contains(err.Error(), "messages[1]") {
		t.Fatalf("error %v does not name the message", err)
	}
	_, _, err = s.SendMessages(ctx, "alice", "q", make([]queue.OutMessage, queue.MaxBatch+1), "")
	wantCode(t, err, errs.Invalid)
	if info := mustInfo(t, s, "q"); info.LastID != 3 {
		t.Fatalf("refused batches sent: %+v", info)
	}
	msgs, err := s.ReceiveMany(ctx, "bob", "q", queue.ReceiveOptions{Max: 5, AckTimeout: time.Minute}, "")
	if err != nil || len(msgs) != 3 || string(msgs[0].Body) != "a" || string(msgs[2].Body) != "c" || msgs[0].Receipt == msgs[1].Receipt {
		t.Fatalf("ReceiveMany = (%+v, %v)", msgs, err)
	}
	for _, m := range msgs {
		if err := s.Ack(ctx, "bob", "q", m.Receipt, ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.ReceiveMany(ctx, "bob", "q", queue.ReceiveOptions{Max: queue.MaxBatch + 1}, "")
	wantCode(t, err, errs.Invalid)
}

func TestService_Groups(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 1, queue.Config{})
	mustCreate(t, s, "alice", "q")
	for _, m := range []struct{ body, group string }{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}, {"a3", "a"}, {"free", ""}} {
		mustSendWith(t, s, "q", queue.OutMessage{Body: []byte(m.body), Group: m.group})
	}
	lease := queue.ReceiveOptions{AckTimeout: time.Minute}
	var got []queue.Message
	for range 3 {
		got = append(got, mustReceive(t, s, "bob", "q", lease))
	}
	if b := []string{string(got[0].Body), string(got[1].Body), string(got[2].Body)}; !slices.Equal(b, []string{"a1", "b1", "free"}) {
		t.Fatalf("one in flight per group: got %q", b)
	}
	nothingFor(t, s, "carol", "q")
	if st := mustInfo(t, s, "q").Stats; st.Waiting != 2 || st.Leased != 3 {
		t.Fatalf("stats = %+v", st)
	}
	if err := s.Nack(ctx, "bob", "q", got[0].Receipt, queue.NackOptions{}, ""); err != nil {
		t.Fatal(err)
	}
	a1 := mustReceive(t, s, "carol", "q", lease)
	if string(a1.Body) != "a1" {
		t.Fatalf("after a nack got %q, want a1 again", a1.Body)
	}
	if err := s.Ack(ctx, "carol", "q", a1.Receipt, ""); err != nil {
		t.Fatal(err)
	}
	if got := receiveBodies(t, s, "carol", "q"); !slices.Equal(got, []string{"a2", "a3"}) {
		t.Fatalf("after the ack got %q", got)
	}
	_, _, err := s.SendMessages(ctx, "alice", "q", []queue.OutMessage{{Body: []byte("x"), Group: "a/b"}}, "")
	wantCode(t, err, errs.Invalid)
}

func TestService_RedriveBrowse(t *testing.T) {
	ctx := context.Background()
	s, r := withDLQ(t, 1)
	mustSend(t, s, "alice", "jobs", "", "private")
	mustSend(t, s, "alice", "jobs", "bob", "for bob")
	for range 2 {
		m := mustReceive(t, s, "bob", "jobs", queue.ReceiveOptions{AckTimeout: time.Minute})
		if err := s.Nack(ctx, "bob", "jobs", m.Receipt, queue.NackOptions{Reason: "nope"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	maintainAll(t, s, r)
	all, _, err := s.Browse(ctx, "alice", "dlq", 0, 0, false)
	if err != nil || len(all) != 2 || all[0].Origin != "jobs" || all[0].DeadReason != "delivery_limit" || all[1].LastReason != "nope" {
		t.Fatalf("Browse by the creator = (%+v, %v)", all, err)
	}
	mine, _, err := s.Browse(ctx, "carol", "dlq", 0, 0, false)
	if err != nil || len(mine) != 1 || string(mine[0].Body) != "private" {
		t.Fatalf("Browse by another user = (%+v, %v), want only the message for anyone", mine, err)
	}
	if after, _, err := s.Browse(ctx, "alice", "dlq", all[0].ID, 10, false); err != nil || len(after) != 1 {
		t.Fatalf("Browse after = (%+v, %v)", after, err)
	}
	_, _, err = s.Browse(ctx, "alice", "missing", 0, 0, false)
	wantCode(t, err, errs.NotFound)
	_, _, err = s.Redrive(ctx, "carol", "dlq", queue.RedriveOptions{}, "")
	wantCode(t, err, errs.Forbidden)
	n, more, err := s.Redrive(ctx, "alice", "dlq", queue.RedriveOptions{Max: 1}, "")
	if err != nil || n != 1 || !more {
		t.Fatalf("Redrive = (%d, %v, %v)", n, more, err)
	}
	if n, more, err = s.Redrive(ctx, "alice", "dlq", queue.RedriveOptions{}, ""); err != nil || n != 1 || more {
		t.Fatalf("second Redrive = (%d, %v, %v)", n, more, err)
	}
	maintainAll(t, s, r)
	back := mustReceive(t, s, "bob", "jobs", queue.ReceiveOptions{AckTimeout: time.Minute})
	if string(back.Body) != "private" || back.Deliveries != 1 || back.Origin != "" {
		t.Fatalf("redriven = %+v", back)
	}
	if st := mustInfo(t, s, "dlq").Stats; st.DeadLetters != 0 || st.Ready != 0 {
		t.Fatalf("dlq stats = %+v", st)
	}
}

func TestService_DeadLetterQueueGone(t *testing.T) {
	ctx := context.Background()
	s, r := withDLQ(t, 1)
	mustSend(t, s, "alice", "jobs", "", "x")
	m := mustReceive(t, s, "bob", "jobs", queue.ReceiveOptions{AckTimeout: time.Minute})
	if _, err := s.Delete(ctx, "alice", "dlq", ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Nack(ctx, "bob", "jobs", m.Receipt, queue.NackOptions{Dead: true}, ""); err != nil {
		t.Fatal(err)
	}
	maintainAll(t, s, r)
	if st := mustInfo(t, s, "jobs").Stats; st.Moving != 0 || st.Dropped != 1 {
		t.Fatalf("stats = %+v, want the dead letter dropped", st)
	}
}
