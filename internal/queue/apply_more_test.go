package queue

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// A move repeated (a mover that crashed between the Import and the OutDone,
// or two movers at once) takes each message once, and the outbox entry goes
// only once.
func TestStateMachine_Apply_MoveIdempotent(t *testing.T) {
	m := newMachine(t)
	m.create("dlq", "alice")
	if _, err := decodeCreateResult(m.apply(EncodeCreate(Create{Queue: "jobs", User: "alice", Settings: SettingsUpdate{
		Set: SetDeadLetter, Settings: Settings{DeadLetter: "dlq"},
	}}))); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"a", "b"} {
		m.send("jobs", "alice", "", body)
		rr := m.receive("jobs", "bob", "", 1000)
		id, lease, _ := ParseReceipt(rr.msg.Receipt)
		if err := decodeOKResult(m.apply(EncodeNack(Nack{Queue: "jobs", User: "bob", ID: id, Lease: lease, Dead: true})), opNack); err != nil {
			t.Fatal(err)
		}
	}
	moves, _, err := pendingWork(m.mem, m.now)
	if err != nil || len(moves) != 1 || len(moves[0].entries) != 2 {
		t.Fatalf("pendingWork = (%+v, %v)", moves, err)
	}
	w := moves[0]
	im := Import{Queue: "dlq", Source: "jobs", Incarnation: w.incarnation}
	for _, e := range w.entries {
		im.Entries = append(im.Entries, ImportEntry{Seq: e.seq, Record: e.record})
	}
	first := EncodeImport(Import{Queue: im.Queue, Source: im.Source, Incarnation: im.Incarnation, Entries: im.Entries[:1]})
	for i, tc := range []struct {
		cmd  []byte
		took uint64
	}{{first, 1}, {EncodeImport(im), 1}, {EncodeImport(im), 0}, {first, 0}} {
		if n, _, err := decodeCountResult(m.apply(tc.cmd), opImport); err != nil || n != tc.took {
			t.Fatalf("import %d took (%d, %v), want %d", i, n, err, tc.took)
		}
	}
	stale := EncodeOutDone(OutDone{Queue: "jobs", Through: w.entries[1].seq, Incarnation: w.incarnation + 1})
	if n, _, err := decodeCountResult(m.apply(stale), opOutDone); err != nil || n != 0 {
		t.Fatalf("out done of another incarnation removed (%d, %v)", n, err)
	}
	done := EncodeOutDone(OutDone{Queue: "jobs", Through: w.entries[1].seq, Incarnation: w.incarnation})
	for i, want := range []uint64{2, 0} {
		if n, _, err := decodeCountResult(m.apply(done), opOutDone); err != nil || n != want {
			t.Fatalf("out done %d removed (%d, %v), want %d", i, n, err, want)
		}
	}
	if got := m.keysUnder("q/jobs/o/"); len(got) != 0 {
		t.Fatalf("outbox keys left: %q", got)
	}
	for _, want := range []string{"a", "b"} {
		if rr := m.receive("dlq", "carol", "", 0); !rr.found || string(rr.msg.Body) != want || rr.msg.Origin != "jobs" {
			t.Fatalf("dlq receive = %+v, want %q", rr, want)
		}
	}
	if rr := m.receive("dlq", "carol", "", 0); rr.found {
		t.Fatalf("a duplicate in the dead-letter queue: %+v", rr.msg)
	}
	// A newer incarnation of the source (deleted and created again) starts
	// its sequence afresh.
	newer := EncodeImport(Import{Queue: "dlq", Source: "jobs", Incarnation: w.incarnation + 100, Entries: im.Entries[:1]})
	if n, _, err := decodeCountResult(m.apply(newer), opImport); err != nil || n != 1 {
		t.Fatalf("import from a newer incarnation took (%d, %v)", n, err)
	}
	wantCode(t, decodeOKResult(m.apply(EncodeOutDone(OutDone{Queue: "jobs", Through: 99, Incarnation: w.incarnation})), opOutDone), "invalid")
}

// modelMsg is a message of the model in TestStateMachine_Apply_PriorityModel.
type modelMsg struct {
	id       uint64
	prio     byte
	to       string
	leasedBy string
	receipt  string
}

// Random sends (priorities, receivers), receives with and without leases,
// acks and nacks agree with a model of the queue: a receive takes the
// highest-priority, oldest message the user may receive. The floors make
// the seeks skip what was taken; this checks that they never skip too far.
func TestStateMachine_Apply_PriorityModel(t *testing.T) {
	for seed := range uint64(20) {
		m := newMachine(t)
		unlimited := SettingsUpdate{Set: SetMaxDeliveries} // nacks never dead-letter here
		if _, err := decodeCreateResult(m.apply(EncodeCreate(Create{Queue: "q", User: "alice", Settings: unlimited}))); err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		var model []*modelMsg
		users := []string{"bob", "carol"}
		for step := range 400 {
			switch op := rng.IntN(10); {
			case op < 4:
				to := []string{"", "", "bob", "carol"}[rng.IntN(4)]
				prio := byte(rng.IntN(3) * 4) // 0, 4, 8
				s := Send{Queue: "q", User: "alice", To: to, SendOptions: SendOptions{Priority: prio}, Body: []byte("x")}
				id, _, err := decodeSendResult(m.apply(EncodeSend(s)))
				if err != nil {
					t.Fatal(err)
				}
				model = append(model, &modelMsg{id: id, prio: prio, to: to})
			case op < 8:
				user := users[rng.IntN(2)]
				var want *modelMsg
				for _, mm := range model {
					if mm.leasedBy == "" && (mm.to == "" || mm.to == user) && (want == nil || mm.prio > want.prio) {
						want = mm
					}
				}
				lease := int64(rng.IntN(2)) * 1_000_000
				rr := m.receive("q", user, "", lease)
				if (want == nil) != !rr.found || want != nil && rr.msg.ID != want.id {
					t.Fatalf("seed %d step %d: %s received %+v, model wants %+v", seed, step, user, rr.msg, want)
				}
				if want == nil {
					continue
				}
				if lease == 0 {
					model = slices.DeleteFunc(model, func(x *modelMsg) bool { return x == want })
				} else {
					want.leasedBy, want.receipt = user, rr.msg.Receipt
				}
			default:
				var leased []*modelMsg
				for _, mm := range model {
					if mm.leasedBy != "" {
						leased = append(leased, mm)
					}
				}
				if len(leased) == 0 {
					continue
				}
				mm := leased[rng.IntN(len(leased))]
				id, lease, _ := ParseReceipt(mm.receipt)
				if rng.IntN(2) == 0 {
					if err := m.ack("q", mm.leasedBy, mm.receipt); err != nil {
						t.Fatal(err)
					}
					model = slices.DeleteFunc(model, func(x *modelMsg) bool { return x == mm })
				} else {
					if err := decodeOKResult(m.apply(EncodeNack(Nack{Queue: "q", User: mm.leasedBy, ID: id, Lease: lease})), opNack); err != nil {
						t.Fatal(err)
					}
					mm.leasedBy, mm.receipt = "", ""
				}
			}
		}
	}
}

// A receive that finds nothing writes nothing once the first one noted the
// index empty in its floor: polling consumers cost no writes, and the
// queue's version (what long polls watch) stays.
func TestStateMachine_Apply_EmptyReceiveWritesNothing(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	m.send("q", "alice", "", "x")
	m.receive("q", "bob", "", 0)
	m.receive("q", "bob", "", 0)
	before := m.snapshot()
	for _, user := range []string{"bob", "carol"} {
		if rr := m.receive("q", user, "", 1000); rr.found {
			t.Fatalf("%s received %+v from an empty queue", user, rr.msg)
		}
	}
	if after := m.snapshot(); !maps.Equal(before, after) {
		t.Fatalf("empty receives changed the state:\nbefore %q\nafter  %q", before, after)
	}
}
