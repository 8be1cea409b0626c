package queue

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

// twin applies every command to two states: one through a StateMachine
// that remembers (a tiny memo budget, so that it also evicts), one through
// the zero StateMachine, which reads everything from the state.
type twin struct {
	t          *testing.T
	memo       StateMachine
	withMemo   *state.Mem
	reference  *state.Mem
	index      uint64
	now        int64
	receipts   []Ack // leases taken and not yet settled, as acks
	rng        *rand.Rand
	queue      string
	deadLetter string
}

func newTwin(t *testing.T, seed uint64) *twin {
	return &twin{
		t: t, memo: StateMachine{memo: newApplyMemo(600), known: &knownRanges{limit: 3}}, withMemo: state.NewMem(), reference: state.NewMem(),
		now: t0, rng: rand.New(rand.NewPCG(seed, 11)), queue: "work", deadLetter: "work-dlq",
	}
}

// apply applies cmd to both states and fails unless the results and the
// states are the same.
func (tw *twin) apply(cmd []byte) []byte {
	tw.t.Helper()
	tw.index++
	meta := state.Meta{Partition: 1, Index: tw.index, TimeMs: tw.now}
	got, err := tw.memo.Apply(tw.withMemo, meta, cmd)
	if err != nil {
		tw.t.Fatalf("Apply with memo (% x): %v", cmd, err)
	}
	want, err := StateMachine{}.Apply(tw.reference, meta, cmd)
	if err != nil {
		tw.t.Fatalf("Apply (% x): %v", cmd, err)
	}
	if !bytes.Equal(got, want) {
		tw.t.Fatalf("index %d: result with memo % x, without % x", tw.index, got, want)
	}
	if d := diffStates(tw.withMemo, tw.reference); d != "" {
		tw.t.Fatalf("index %d: states differ: %s", tw.index, d)
	}
	return got
}

// diffStates describes the first difference between two states, "" if none.
func diffStates(a, b *state.Mem) string {
	ka, kb := dump(a), dump(b)
	if len(ka) != len(kb) {
		return "key counts differ"
	}
	for i := range ka {
		if !bytes.Equal(ka[i][0], kb[i][0]) || !bytes.Equal(ka[i][1], kb[i][1]) {
			return "at key " + string(ka[i][0]) + " / " + string(kb[i][0])
		}
	}
	return ""
}

func dump(s *state.Mem) [][2][]byte {
	var kv [][2][]byte
	_ = s.Scan(nil, nil, func(k, v []byte) bool {
		kv = append(kv, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
		return true
	})
	return kv
}

func copyMem(s *state.Mem) *state.Mem {
	c := state.NewMem()
	for _, e := range dump(s) {
		_ = c.Set(e[0], e[1])
	}
	return c
}

func (tw *twin) create() {
	tw.apply(EncodeCreate(Create{Queue: tw.deadLetter, User: "alice"}))
	tw.apply(EncodeCreate(Create{Queue: tw.queue, User: "alice", Settings: SettingsUpdate{
		Set:      SetMaxDeliveries | SetDeadLetter | SetMaxLength | SetOverflow,
		Settings: Settings{MaxDeliveries: 2, DeadLetter: tw.deadLetter, MaxLength: 12, DropOldest: true},
	}}))
}

// step applies one random command.
func (tw *twin) step() {
	r := tw.rng
	users := []string{"alice", "bob"}
	switch n := r.IntN(100); {
	case n < 35:
		o := SendOptions{Priority: byte(r.IntN(3) * 4)}
		switch r.IntN(6) {
		case 0:
			o.DelayMs = int64(r.IntN(800))
		case 1:
			o.TTLMs = int64(1 + r.IntN(1500))
		case 2:
			o.Group = []string{"g1", "g2"}[r.IntN(2)]
		}
		to := []string{"", "", "bob"}[r.IntN(3)]
		tw.apply(EncodeSend(Send{Queue: tw.queue, User: users[r.IntN(2)], To: to, SendOptions: o, Body: []byte("m")}))
	case n < 65:
		tw.receive(users[r.IntN(2)], int64(r.IntN(3))*500)
	case n < 85 && len(tw.receipts) > 0:
		tw.settle()
	case n < 95:
		tw.now += int64(r.IntN(700))
		tw.apply(EncodeTick(Tick{Queue: tw.queue}))
	case n < 98:
		tw.apply(EncodePurge(Purge{Queue: tw.queue, User: "alice"}))
	default:
		tw.apply(EncodeDelete(Delete{Queue: tw.queue, User: "alice"}))
		tw.apply(EncodeDelete(Delete{Queue: tw.deadLetter, User: "alice"}))
		tw.create()
	}
}

func (tw *twin) receive(user string, ackMs int64) {
	// Half the time the receive acknowledges up to two earlier leases of
	// the user's (they may have lapsed: then it is refused whole).
	var acks []Held
	for i := 0; i < len(tw.receipts) && len(acks) < 2 && tw.rng.IntN(2) == 0; {
		a := tw.receipts[i]
		if a.User != user {
			i++
			continue
		}
		acks = append(acks, Held{ID: a.ID, Lease: a.Lease})
		tw.receipts = append(tw.receipts[:i], tw.receipts[i+1:]...)
	}
	if !SortHeld(acks) {
		acks = acks[:1]
	}
	rr, err := decodeReceiveResult(tw.apply(EncodeReceive(Receive{Queue: tw.queue, User: user, AckTimeoutMs: ackMs, Max: 1 + tw.rng.IntN(2), Acks: acks})))
	if err != nil {
		return // a refusal: both states refused alike
	}
	for _, m := range rr.msgs {
		if id, lease, ok := ParseReceipt(m.Receipt); ok {
			tw.receipts = append(tw.receipts, Ack{Queue: tw.queue, User: user, ID: id, Lease: lease})
		}
	}
}

// settle acks, nacks or extends a lease taken earlier (it may have lapsed).
func (tw *twin) settle() {
	i := tw.rng.IntN(len(tw.receipts))
	a := tw.receipts[i]
	tw.receipts = append(tw.receipts[:i], tw.receipts[i+1:]...)
	switch tw.rng.IntN(4) {
	case 0:
		tw.apply(EncodeNack(Nack{Queue: a.Queue, User: a.User, ID: a.ID, Lease: a.Lease, Dead: tw.rng.IntN(2) == 0}))
	case 1:
		tw.apply(EncodeExtend(Extend{Queue: a.Queue, User: a.User, ID: a.ID, Lease: a.Lease, AckTimeoutMs: 300}))
		tw.receipts = append(tw.receipts, a)
	default:
		tw.apply(EncodeAck(a))
	}
}

// TestMemo_AppliesAsWithout: a StateMachine that remembers what it reads
// (with a budget small enough to evict all the time) gives every command
// the same result and leaves the same state as one that remembers nothing.
func TestMemo_AppliesAsWithout(t *testing.T) {
	for seed := range uint64(8) {
		tw := newTwin(t, seed)
		tw.create()
		for range 1500 {
			tw.step()
		}
	}
}

// TestMemo_ResetWhenStateReplaced: when the state is replaced under the
// StateMachine (a snapshot), Reset makes it apply as one that never saw
// the old state; without Reset it would apply from stale records, which
// the test shows too (so the memo is in use).
func TestMemo_ResetWhenStateReplaced(t *testing.T) {
	tw := newTwin(t, 42)
	tw.create()
	for range 200 {
		tw.step()
	}
	snapshot := copyMem(tw.withMemo)
	for range 300 { // the memo learns the later state
		tw.step()
	}
	cmd := EncodeSend(Send{Queue: tw.queue, User: "alice", Body: []byte("after the snapshot")})
	meta := state.Meta{Partition: 1, Index: tw.index + 1, TimeMs: tw.now}
	want, err := StateMachine{}.Apply(copyMem(snapshot), meta, cmd)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := tw.memo.Apply(copyMem(snapshot), meta, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(stale, want) {
		t.Fatalf("without Reset the send answered %x as from the snapshot: the memo was not used", stale)
	}
	tw.memo.Reset()
	got, err := tw.memo.Apply(copyMem(snapshot), meta, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("after Reset the send answered % x, want % x", got, want)
	}
}

// TestMemoKey: only records read by key are remembered.
func TestMemoKey(t *testing.T) {
	k := keysOf("q1")
	for _, c := range []struct {
		key  []byte
		want bool
	}{
		{recordKey("q1"), true},
		{k.msg(7), true},
		{k.floor(k.readyPrefix(false, "", "")), true},
		{k.build(0, "g/", "grp"), true},
		{k.readyPrefix(false, "", ""), false},
		{k.build(0, "l/x"), false},
		{k.build(0, "o/x"), false},
		{[]byte("k/other"), false},
		{[]byte("q/short"), false},
	} {
		if got := memoKey(c.key); got != c.want {
			t.Errorf("memoKey(%q) = %v, want %v", c.key, got, c.want)
		}
	}
}

// countingWriter counts the reads Apply makes of the state.
type countingWriter struct {
	state.Writer
	gets, scans int
}

func (c *countingWriter) Get(key []byte) ([]byte, bool, error) {
	c.gets++
	return c.Writer.Get(key)
}

func (c *countingWriter) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	c.scans++
	return c.Writer.Scan(lo, hi, fn)
}

// BenchmarkApply_MessageThrough applies one message's three commands
// (send, leased receive, ack) per operation, with and without the memo,
// and reports the point reads (gets/msg) and seeks (scans/msg) they ask of
// the state: what each costs in Pebble on the engine's apply goroutine.
func BenchmarkApply_MessageThrough(b *testing.B) {
	for _, name := range []string{"without-memo", "memo"} {
		b.Run(name, func(b *testing.B) {
			sm := StateMachine{}
			if name == "memo" {
				sm = NewStateMachine()
			}
			w := &countingWriter{Writer: state.NewMem()}
			var index uint64
			apply := func(cmd []byte) []byte {
				index++
				res, err := sm.Apply(w, state.Meta{Partition: 1, Index: index, TimeMs: t0 + int64(index)}, cmd)
				if err != nil {
					b.Fatal(err)
				}
				return res
			}
			apply(EncodeCreate(Create{Queue: "jobs", User: "alice"}))
			body := make([]byte, 200)
			w.gets, w.scans = 0, 0
			for b.Loop() {
				apply(EncodeSend(Send{Queue: "jobs", User: "alice", Body: body}))
				rr, err := decodeReceiveResult(apply(EncodeReceive(Receive{Queue: "jobs", User: "bob", AckTimeoutMs: 60_000})))
				if err != nil || len(rr.msgs) != 1 {
					b.Fatalf("receive: %v, %d messages", err, len(rr.msgs))
				}
				id, lease, _ := ParseReceipt(rr.msgs[0].Receipt)
				if err := decodeAckResult(apply(EncodeAck(Ack{Queue: "jobs", User: "bob", ID: id, Lease: lease}))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.gets)/float64(b.N), "gets/msg")
			b.ReportMetric(float64(w.scans)/float64(b.N), "scans/msg")
		})
	}
}

// TestKnownRanges_ResetWhenStateReplaced: a StateMachine remembers that a
// receiver's own ready index was empty; when the state is replaced by one
// where that index holds a message (a snapshot), Reset makes the next
// receive find it, and without Reset it would not (so the ranges are in
// use).
func TestKnownRanges_ResetWhenStateReplaced(t *testing.T) {
	sm := NewStateMachine()
	st := state.NewMem()
	var index uint64
	apply := func(sm StateMachine, w state.Writer, cmd []byte) []byte {
		t.Helper()
		index++
		res, err := sm.Apply(w, state.Meta{Partition: 1, Index: index, TimeMs: t0}, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	received := func(res []byte) int {
		t.Helper()
		rr, err := decodeReceiveResult(res)
		if err != nil {
			t.Fatal(err)
		}
		return len(rr.msgs)
	}
	receive := EncodeReceive(Receive{Queue: "jobs", User: "bob", AckTimeoutMs: 60_000})
	apply(sm, st, EncodeCreate(Create{Queue: "jobs", User: "alice"}))
	if n := received(apply(sm, st, receive)); n != 0 {
		t.Fatalf("an empty queue gave %d messages", n)
	}
	// The replacing state: a message for bob, written without sm.
	snapshot := copyMem(st)
	apply(StateMachine{}, snapshot, EncodeSend(Send{Queue: "jobs", User: "alice", To: "bob", Body: []byte("for bob")}))
	if n := received(apply(sm, copyMem(snapshot), receive)); n != 0 {
		t.Fatalf("without Reset the receive found %d messages: the known ranges were not used", n)
	}
	sm.Reset()
	if n := received(apply(sm, copyMem(snapshot), receive)); n != 1 {
		t.Fatalf("after Reset the receive found %d messages, want 1", n)
	}
}
