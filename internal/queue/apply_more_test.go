package queue

import (
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
	done := EncodeOutDone(OutDone{Queue: "jobs", Through: w.entries[1].seq})
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
	wantCode(t, decodeOKResult(m.apply(EncodeOutDone(OutDone{Queue: "jobs", Through: 99})), opOutDone), "invalid")
}
