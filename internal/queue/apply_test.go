package queue

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

const t0 = 1_700_000_000_000 // a leader-stamped time, Unix ms

// machine applies commands to one partition's state the way the engine
// does: increasing indexes, a clock the test moves.
type machine struct {
	t     testing.TB
	mem   *state.Mem
	index uint64
	now   int64
}

func newMachine(t testing.TB) *machine {
	return &machine{t: t, mem: state.NewMem(), now: t0}
}

func (m *machine) apply(cmd []byte) []byte {
	m.t.Helper()
	m.index++
	res, err := StateMachine{}.Apply(m.mem, state.Meta{Partition: 1, Index: m.index, TimeMs: m.now}, cmd)
	if err != nil {
		m.t.Fatalf("Apply(% x): %v", cmd, err)
	}
	return res
}

func (m *machine) create(queue, user string) {
	m.t.Helper()
	if _, err := decodeCreateResult(m.apply(EncodeCreate(Create{Queue: queue, User: user}))); err != nil {
		m.t.Fatalf("create %q: %v", queue, err)
	}
}

func (m *machine) send(queue, user, to, body string) uint64 {
	m.t.Helper()
	id, _, err := decodeSendResult(m.apply(EncodeSend(Send{Queue: queue, User: user, To: to, Body: []byte(body)})))
	if err != nil {
		m.t.Fatalf("send to %q: %v", queue, err)
	}
	return id
}

func (m *machine) receive(queue, user, from string, ackMs int64) receiveResult {
	m.t.Helper()
	rr, err := decodeReceiveResult(m.apply(EncodeReceive(Receive{Queue: queue, User: user, From: from, AckTimeoutMs: ackMs})))
	if err != nil {
		m.t.Fatalf("receive from %q: %v", queue, err)
	}
	return rr
}

// mustReceive receives and wants the message with body want.
func (m *machine) mustReceive(queue, user, from string, ackMs int64, want string) Message {
	m.t.Helper()
	rr := m.receive(queue, user, from, ackMs)
	if !rr.found || string(rr.msg.Body) != want {
		m.t.Fatalf("%s receives %+v (found %v), want body %q", user, rr.msg, rr.found, want)
	}
	return rr.msg
}

func (m *machine) mustReceiveNothing(queue, user, from string) {
	m.t.Helper()
	if rr := m.receive(queue, user, from, 0); rr.found {
		m.t.Fatalf("%s receives %+v, want nothing", user, rr.msg)
	}
}

func (m *machine) ack(queue, user, receipt string) error {
	m.t.Helper()
	id, lease, ok := ParseReceipt(receipt)
	if !ok {
		m.t.Fatalf("bad receipt %q", receipt)
	}
	return decodeAckResult(m.apply(EncodeAck(Ack{Queue: queue, User: user, ID: id, Lease: lease})))
}

// snapshot returns every key and value of the state.
func (m *machine) snapshot() map[string]string {
	s := map[string]string{}
	_ = m.mem.Scan(nil, nil, func(k, v []byte) bool {
		s[string(k)] = string(v)
		return true
	})
	return s
}

// keysUnder returns the state keys starting with prefix.
func (m *machine) keysUnder(prefix string) []string {
	return slices.Sorted(func(yield func(string) bool) {
		for k := range m.snapshot() {
			if strings.HasPrefix(k, prefix) && !yield(k) {
				return
			}
		}
	})
}

// messageKeysUnder is keysUnder without the ready indexes' floors, which
// outlive the messages.
func (m *machine) messageKeysUnder(prefix string) []string {
	return slices.DeleteFunc(m.keysUnder(prefix), func(k string) bool { return strings.HasPrefix(k, prefix+"f/") })
}

func wantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if got := errs.CodeOf(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

// TestStateMachine_Apply_Refusals applies every refused command after a
// setup and checks the code and that the state did not change.
func TestStateMachine_Apply_Refusals(t *testing.T) {
	setup := func(m *machine) string {
		m.create("jobs", "alice")
		m.send("jobs", "alice", "", "one")
		m.send("jobs", "alice", "bob", "two")
		return m.receive("jobs", "bob", "", 60_000).msg.Receipt
	}
	cases := []struct {
		name   string
		cmd    func(receipt string) []byte
		decode func([]byte) error
		want   errs.Code
		later  int64 // ms to advance the clock before the command
	}{
		{"create existing", func(string) []byte { return EncodeCreate(Create{Queue: "jobs", User: "bob"}) }, createErr, errs.Conflict, 0},
		{"delete missing", func(string) []byte { return EncodeDelete(Delete{Queue: "nope", User: "alice"}) }, deleteErr, errs.NotFound, 0},
		{"delete by another", func(string) []byte { return EncodeDelete(Delete{Queue: "jobs", User: "bob"}) }, deleteErr, errs.Forbidden, 0},
		{"send missing", func(string) []byte { return EncodeSend(Send{Queue: "nope", User: "a", Body: []byte("x")}) }, sendErr, errs.NotFound, 0},
		{"receive missing", func(string) []byte { return EncodeReceive(Receive{Queue: "nope", User: "a"}) }, receiveErr, errs.NotFound, 0},
		{"ack missing queue", func(r string) []byte { return ackCmd("nope", "bob", r) }, decodeAckResult, errs.NotFound, 0},
		{"ack by another user", func(r string) []byte { return ackCmd("jobs", "carol", r) }, decodeAckResult, errs.Conflict, 0},
		{"ack unknown lease", func(string) []byte { return EncodeAck(Ack{Queue: "jobs", User: "bob", ID: 1, Lease: 999}) }, decodeAckResult, errs.Conflict, 0},
		{"ack unknown message", func(string) []byte { return EncodeAck(Ack{Queue: "jobs", User: "bob", ID: 99, Lease: 4}) }, decodeAckResult, errs.Conflict, 0},
		{"ack after lapse", func(r string) []byte { return ackCmd("jobs", "bob", r) }, decodeAckResult, errs.Conflict, 60_001},
		{"malformed", func(string) []byte { return []byte{Tag, opSend, 0, 0} }, sendErr, errs.Invalid, 0},
		{"empty", func(string) []byte { return nil }, sendErr, errs.Invalid, 0},
		{"receive bad timeout", func(string) []byte { return EncodeReceive(Receive{Queue: "jobs", User: "a", AckTimeoutMs: -5}) }, receiveErr, errs.Invalid, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			receipt := setup(m)
			m.now += tc.later
			before := m.snapshot()
			wantCode(t, tc.decode(m.apply(tc.cmd(receipt))), tc.want)
			if after := m.snapshot(); !maps.Equal(before, after) {
				t.Fatalf("refused command changed the state:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

func ackCmd(queue, user, receipt string) []byte {
	id, lease, _ := ParseReceipt(receipt)
	return EncodeAck(Ack{Queue: queue, User: user, ID: id, Lease: lease})
}

func createErr(res []byte) error  { _, err := decodeCreateResult(res); return err }
func deleteErr(res []byte) error  { _, err := decodeDeleteResult(res); return err }
func sendErr(res []byte) error    { _, _, err := decodeSendResult(res); return err }
func receiveErr(res []byte) error { _, err := decodeReceiveResult(res); return err }

func TestStateMachine_Apply_CreateSend(t *testing.T) {
	m := newMachine(t)
	created, err := decodeCreateResult(m.apply(EncodeCreate(Create{Queue: "jobs", User: "alice"})))
	if err != nil || created != t0 {
		t.Fatalf("create = (%d, %v), want %d", created, err, t0)
	}
	for want := uint64(1); want <= 3; want++ {
		m.now += 5
		id, ts, err := decodeSendResult(m.apply(EncodeSend(Send{Queue: "jobs", User: "alice", Body: []byte("x")})))
		if err != nil || id != want || ts != m.now {
			t.Fatalf("send = (%d, %d, %v), want (%d, %d)", id, ts, err, want, m.now)
		}
	}
	infos, err := List(m.mem)
	if err != nil {
		t.Fatal(err)
	}
	want := []QueueInfo{{Name: "jobs", Creator: "alice", CreatedMs: t0, Messages: 3, LastID: 3,
		Stats: Stats{Ready: 3, OldestMs: t0 + 5}, Settings: Settings{MaxDeliveries: DefaultMaxDeliveries}}}
	if !slices.Equal(infos, want) {
		t.Fatalf("List = %+v, want %+v", infos, want)
	}
	t.Run("times never decrease within a queue", func(t *testing.T) {
		last := m.now
		m.now -= 1000 // cannot happen in a partition; the queue holds anyway
		_, ts, err := decodeSendResult(m.apply(EncodeSend(Send{Queue: "jobs", User: "alice", Body: []byte("x")})))
		if err != nil || ts != last {
			t.Fatalf("send time = (%d, %v), want %d", ts, err, last)
		}
	})
}

func TestStateMachine_Apply_Order(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	for i := range 50 {
		to := ""
		if i%3 == 0 {
			to = "bob"
		}
		if id := m.send("q", fmt.Sprintf("s%d", i%4), to, fmt.Sprint(i)); id != uint64(i+1) {
			t.Fatalf("message %d got id %d", i, id)
		}
	}
	var lastID uint64
	for i := range 50 {
		msg := m.mustReceive("q", "bob", "", 0, fmt.Sprint(i))
		if msg.ID != uint64(i+1) || msg.ID <= lastID {
			t.Fatalf("received id %d after %d", msg.ID, lastID)
		}
		lastID = msg.ID
	}
	m.mustReceiveNothing("q", "bob", "")
	if keys := m.messageKeysUnder("q/q/"); len(keys) != 0 {
		t.Fatalf("keys left after receiving everything: %q", keys)
	}
}

func TestStateMachine_Apply_Receivers(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	m.send("q", "alice", "bob", "a->bob")
	m.send("q", "carol", "", "carol->any")
	m.send("q", "alice", "", "alice->any")
	m.send("q", "carol", "BOB", "carol->bob")
	m.send("q", "alice", "dave", "a->dave")

	t.Run("others see only messages for anyone", func(t *testing.T) {
		p, found, err := Peek(m.mem, "q", "erin", "", t0)
		if err != nil || !found || string(p.Body) != "carol->any" {
			t.Fatalf("erin peeks (%+v, %v, %v)", p, found, err)
		}
		p, found, err = Peek(m.mem, "q", "erin", "alice", t0)
		if err != nil || !found || string(p.Body) != "alice->any" || p.ID != 3 {
			t.Fatalf("erin peeks from alice (%+v, %v, %v)", p, found, err)
		}
	})
	t.Run("from a particular sender", func(t *testing.T) {
		m.mustReceive("q", "bob", "Carol", 0, "carol->any")
		m.mustReceive("q", "Bob", "carol", 0, "carol->bob")
		m.mustReceiveNothing("q", "bob", "carol")
		m.mustReceiveNothing("q", "bob", "nobody")
	})
	t.Run("for me or for anyone, oldest first", func(t *testing.T) {
		m.mustReceive("q", "bob", "", 0, "a->bob")
		m.mustReceive("q", "bob", "", 0, "alice->any")
		m.mustReceiveNothing("q", "bob", "")
	})
	t.Run("the anonymous user takes only messages for anyone", func(t *testing.T) {
		m.send("q", "alice", "", "for anyone")
		m.mustReceive("q", "", "", 0, "for anyone")
		m.mustReceiveNothing("q", "", "")
	})
	m.mustReceive("q", "dave", "alice", 0, "a->dave")
	if keys := m.messageKeysUnder("q/q/"); len(keys) != 0 {
		t.Fatalf("keys left after receiving everything: %q", keys)
	}
}

func TestStateMachine_Apply_Leases(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	m.send("q", "alice", "", "one")
	m.send("q", "alice", "", "two")

	first := m.mustReceive("q", "bob", "", 1000, "one")
	if first.Receipt == "" || first.LeaseExpiresMs != t0+1000 || first.Deliveries != 1 {
		t.Fatalf("leased message %+v", first)
	}
	t.Run("a leased message is invisible while the lease lasts", func(t *testing.T) {
		m.now += 1000 // the lease lasts while TimeMs <= expiry
		if p, _, _ := Peek(m.mem, "q", "carol", "", m.now); p.ID != 2 {
			t.Fatalf("peek during the lease = %+v, want id 2", p)
		}
		second := m.mustReceive("q", "carol", "", 500, "two")
		rr := m.receive("q", "carol", "", 0)
		if rr.found || rr.nextLapseMs != t0+1000 || rr.index != m.index {
			t.Fatalf("empty receive = %+v, want next lapse %d at index %d", rr, t0+1000, m.index)
		}
		if err := m.ack("q", "carol", second.Receipt); err != nil {
			t.Fatalf("ack in time: %v", err)
		}
		wantCode(t, m.ack("q", "carol", second.Receipt), errs.Conflict) // twice
	})
	t.Run("after expiry it is delivered again", func(t *testing.T) {
		m.now++
		p, found, err := Peek(m.mem, "q", "carol", "", m.now)
		if err != nil || !found || p.ID != first.ID || p.Deliveries != 1 {
			t.Fatalf("peek after the lapse = (%+v, %v, %v)", p, found, err)
		}
		again := m.mustReceive("q", "carol", "", 1000, "one")
		if again.ID != first.ID || again.Deliveries != 2 || again.Receipt == first.Receipt {
			t.Fatalf("redelivered %+v after %+v", again, first)
		}
		wantCode(t, m.ack("q", "bob", first.Receipt), errs.Conflict)
		wantCode(t, m.ack("q", "bob", again.Receipt), errs.Conflict) // not bob's lease
		if err := m.ack("q", "Carol", again.Receipt); err != nil {
			t.Fatalf("ack by the holder: %v", err)
		}
	})
	m.mustReceiveNothing("q", "bob", "")
	infos, _ := List(m.mem)
	if len(infos) != 1 || infos[0].Messages != 0 || infos[0].InFlight != 0 {
		t.Fatalf("List = %+v", infos)
	}
	if keys := m.messageKeysUnder("q/q/"); len(keys) != 0 {
		t.Fatalf("keys left after acking everything: %q", keys)
	}
}

func TestStateMachine_Apply_LeaseKeepsPosition(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	for _, b := range []string{"1", "2", "3"} {
		m.send("q", "alice", "", b)
	}
	m.mustReceive("q", "bob", "", 10, "1")
	m.mustReceive("q", "bob", "", 20, "2")
	m.now += 21
	// Both leases lapsed; the sends are received again in send order.
	m.mustReceive("q", "bob", "", 0, "1")
	m.mustReceive("q", "bob", "", 0, "2")
	m.mustReceive("q", "bob", "", 0, "3")
	m.mustReceiveNothing("q", "bob", "")
}

func TestStateMachine_Apply_ReapBound(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	n := MaxReapPerApply + 10
	for i := range n {
		m.send("q", "alice", "", fmt.Sprint(i))
	}
	for i := range n {
		m.mustReceive("q", "bob", "", 5, fmt.Sprint(i))
	}
	m.now += 100
	before := m.index
	m.send("q", "alice", "", "last") // reaps the first MaxReapPerApply leases
	q, _, _ := loadQueue(m.mem, "q")
	if q.leased != 10 || q.version != before+1 {
		t.Fatalf("after one reap: %d leased (want 10), version %d", q.leased, q.version)
	}
	for i := range n {
		m.mustReceive("q", "bob", "", 0, fmt.Sprint(i))
	}
	m.mustReceive("q", "bob", "", 0, "last")
}

func TestStateMachine_Apply_Delete(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	m.create("q2", "alice")
	m.create("q.", "alice") // sorts between "q" and "q/"
	m.send("q2", "alice", "", "keep")
	m.send("q.", "alice", "", "keep")
	for i := range 5 {
		m.send("q", "alice", "", fmt.Sprint(i))
		m.send("q", "carol", "bob", fmt.Sprint(i))
	}
	m.receive("q", "bob", "", 1000)
	m.receive("q", "bob", "carol", 1000)
	m.receive("q", "bob", "", 0)
	others := func() map[string]string {
		s := m.snapshot()
		maps.DeleteFunc(s, func(k, _ string) bool { return strings.HasPrefix(k, "q/q/") || k == "q/!/q" })
		return s
	}
	before := others()

	removed, err := decodeDeleteResult(m.apply(EncodeDelete(Delete{Queue: "q", User: "ALICE"})))
	if err != nil || removed != 9 {
		t.Fatalf("delete = (%d, %v), want 9 removed", removed, err)
	}
	if keys := m.keysUnder("q/q/"); len(keys) != 0 {
		t.Fatalf("keys left after delete: %q", keys)
	}
	if _, found, _ := loadQueue(m.mem, "q"); found {
		t.Fatal("queue record left after delete")
	}
	if after := others(); !maps.Equal(before, after) {
		t.Fatalf("delete touched other queues:\nbefore %q\nafter  %q", before, after)
	}
	t.Run("recreated queue starts empty at id 1", func(t *testing.T) {
		m.create("q", "bob")
		m.mustReceiveNothing("q", "bob", "")
		if id := m.send("q", "bob", "", "new"); id != 1 {
			t.Fatalf("first id after recreate = %d", id)
		}
	})
	t.Run("admin deletes any queue", func(t *testing.T) {
		if _, err := decodeDeleteResult(m.apply(EncodeDelete(Delete{Queue: "q", User: "root", Admin: true}))); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStateMachine_Apply_Deterministic applies one random-looking workload
// to two states and wants identical states and results.
func TestStateMachine_Apply_Deterministic(t *testing.T) {
	run := func() (map[string]string, [][]byte) {
		m := newMachine(t)
		var results [][]byte
		do := func(cmd []byte) { results = append(results, m.apply(cmd)) }
		do(EncodeCreate(Create{Queue: "q", User: "alice"}))
		users := []string{"alice", "bob", "carol", ""}
		for i := range 300 {
			u, v := users[i%4], users[(i*7+1)%4]
			m.now += int64(i % 5)
			switch i % 6 {
			case 0, 1, 2:
				do(EncodeSend(Send{Queue: "q", User: u, To: v, Body: []byte(fmt.Sprint(i))}))
			case 3:
				do(EncodeReceive(Receive{Queue: "q", User: u, AckTimeoutMs: int64(i % 11)}))
			case 4:
				do(EncodeReceive(Receive{Queue: "q", User: u, From: v}))
			case 5:
				do(EncodeAck(Ack{Queue: "q", User: u, ID: uint64(i/3 + 1), Lease: m.index - 2}))
			}
		}
		return m.snapshot(), results
	}
	s1, r1 := run()
	s2, r2 := run()
	if !maps.Equal(s1, s2) {
		t.Fatal("the same commands produced different states")
	}
	if !slices.EqualFunc(r1, r2, bytes.Equal) {
		t.Fatal("the same commands produced different results")
	}
}

func TestPeek_Missing(t *testing.T) {
	m := newMachine(t)
	_, _, err := Peek(m.mem, "nope", "bob", "", t0)
	wantCode(t, err, errs.NotFound)
	m.create("q", "alice")
	if _, found, err := Peek(m.mem, "q", "bob", "", t0); found || err != nil {
		t.Fatalf("peek on empty queue = (%v, %v)", found, err)
	}
}

func TestWaiting(t *testing.T) {
	m := newMachine(t)
	for _, q := range []string{"a", "b", "c", "d", "e"} {
		m.create(q, "alice")
	}
	m.send("a", "alice", "bob", "for bob")
	m.send("b", "alice", "", "for anyone")
	m.send("c", "alice", "carol", "for carol")
	m.send("d", "alice", "", "leased")
	m.receive("d", "carol", "", 100)
	names := func(user string, now int64) []string {
		infos, err := Waiting(m.mem, user, now)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, i := range infos {
			n = append(n, i.Name)
		}
		return n
	}
	if got := names("bob", t0); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("waiting for bob = %q", got)
	}
	if got := names("CAROL", t0); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("waiting for carol = %q", got)
	}
	if got := names("bob", t0+101); !slices.Equal(got, []string{"a", "b", "d"}) {
		t.Fatalf("waiting for bob after the lease lapsed = %q", got)
	}
	all, err := List(m.mem)
	if err != nil || len(all) != 5 || all[3].InFlight != 1 || all[3].Messages != 1 {
		t.Fatalf("List = (%+v, %v)", all, err)
	}
}

func TestDecodeResults(t *testing.T) {
	cases := []struct {
		name string
		res  []byte
		want errs.Code
	}{
		{"ok", sendResult(1, 2), ""},
		{"not found", notFound(opSend, "q"), errs.NotFound},
		{"conflict", refusal(statusConflict, opSend, "x"), errs.Conflict},
		{"forbidden", refusal(statusForbidden, opSend, "x"), errs.Forbidden},
		{"invalid", invalidResult([]byte{Tag, opSend}, errMalformed), errs.Invalid},
		{"invalid without op", invalidResult(nil, errMalformed), errs.Invalid},
		{"result of another op", createResult(1), errs.Conflict},
		{"empty", nil, errs.Internal},
		{"unknown status", refusal(9, opSend, "x"), errs.Internal},
		{"truncated", sendResult(1, 2)[:4], errs.Internal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := decodeSendResult(tc.res)
			wantCode(t, err, tc.want)
		})
	}
	t.Run("receive round trip", func(t *testing.T) {
		m := messageRecord{timeMs: 5, deliveries: 2, until: 9, leaseIndex: 8, state: stateLeased, sender: "a", receiver: "b", body: []byte("hi")}
		taken := []takenMessage{{id: 3, m: m}}
		rr, err := decodeReceiveResult(encodeReceiveResult(8, 0, taken))
		want := Message{ID: 3, Sender: "a", Receiver: "b", TimeMs: 5, Body: []byte("hi"), Deliveries: 2, Receipt: FormatReceipt(3, 8), LeaseExpiresMs: 9}
		if err != nil || !rr.found || rr.index != 8 || !reflectEqual(rr.msg, want) {
			t.Fatalf("decode = (%+v, %v), want %+v", rr, err, want)
		}
		enc := encodeReceiveResult(8, 0, taken)
		for i := 2; i < len(enc); i++ {
			if _, err := decodeReceiveResult(enc[:i]); err == nil {
				t.Fatalf("result truncated to %d bytes decodes", i)
			}
		}
		rr, err = decodeReceiveResult(encodeReceiveResult(9, 77, nil))
		if err != nil || rr.found || rr.index != 9 || rr.nextLapseMs != 77 {
			t.Fatalf("empty receive result = (%+v, %v)", rr, err)
		}
	})
}

func reflectEqual(a, b Message) bool {
	return a.ID == b.ID && a.Sender == b.Sender && a.Receiver == b.Receiver && a.TimeMs == b.TimeMs &&
		bytes.Equal(a.Body, b.Body) && a.Deliveries == b.Deliveries && a.Receipt == b.Receipt && a.LeaseExpiresMs == b.LeaseExpiresMs
}

// BenchmarkApply_SendReceive measures one Send and one Receive applied to a
// queue, as the seed's experiments did, with 200 and 2000 byte bodies.
func BenchmarkApply_SendReceive(b *testing.B) {
	for _, size := range []int{200, 2000} {
		for _, leased := range []bool{false, true} {
			name := fmt.Sprintf("body=%d", size)
			if leased {
				name += "/ack"
			}
			b.Run(name, func(b *testing.B) {
				m := newMachine(b)
				m.create("jobs", "alice")
				send := EncodeSend(Send{Queue: "jobs", User: "alice", Body: bytes.Repeat([]byte("x"), size)})
				recv := EncodeReceive(Receive{Queue: "jobs", User: "bob"})
				if leased {
					recv = EncodeReceive(Receive{Queue: "jobs", User: "bob", AckTimeoutMs: 30_000})
				}
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					m.apply(send)
					res := m.apply(recv)
					if !leased {
						continue
					}
					rr, err := decodeReceiveResult(res)
					if err != nil || !rr.found {
						b.Fatalf("receive: %+v %v", rr, err)
					}
					if err := m.ack("jobs", "bob", rr.msg.Receipt); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// scanCounter counts the scans made through it.
type scanCounter struct {
	state.Writer
	scans int
}

func (s *scanCounter) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	s.scans++
	return s.Writer.Scan(lo, hi, fn)
}

// TestStateMachine_Apply_LeaseFloor checks that commands look for lapsed
// leases only when one may have lapsed, and still find every one.
func TestStateMachine_Apply_LeaseFloor(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	for _, b := range []string{"1", "2", "3"} {
		m.send("q", "alice", "", b)
	}
	short := m.mustReceive("q", "bob", "", 100, "1")
	m.mustReceive("q", "bob", "", 200, "2")
	scansOf := func(cmd []byte) int {
		t.Helper()
		w := &scanCounter{Writer: m.mem}
		m.index++
		if _, err := (StateMachine{}).Apply(w, state.Meta{Partition: 1, Index: m.index, TimeMs: m.now}, cmd); err != nil {
			t.Fatal(err)
		}
		return w.scans
	}
	send := EncodeSend(Send{Queue: "q", User: "alice", Body: []byte("x")})
	if n := scansOf(send); n != 0 {
		t.Fatalf("a send while no lease can have lapsed scans %d times", n)
	}
	if err := m.ack("q", "bob", short.Receipt); err != nil {
		t.Fatal(err)
	}
	m.now += 150 // past the acked lease's expiry, the floor; before the other's
	if n := scansOf(send); n != 1 {
		t.Fatalf("a send past the floor scans %d times, want 1", n)
	}
	if n := scansOf(send); n != 0 {
		t.Fatalf("a send after the floor moved up scans %d times", n)
	}
	m.now += 51
	m.mustReceive("q", "carol", "", 0, "2")
	m.mustReceive("q", "carol", "", 0, "3")
}
