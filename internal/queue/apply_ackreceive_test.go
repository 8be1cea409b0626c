package queue

import (
	"maps"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

// heldOfReceipts turns receipts into the leases a Receive acknowledges.
func heldOfReceipts(t testing.TB, receipts ...string) []Held {
	t.Helper()
	hs := make([]Held, len(receipts))
	for i, r := range receipts {
		id, lease, ok := ParseReceipt(r)
		if !ok {
			t.Fatalf("bad receipt %q", r)
		}
		hs[i] = Held{ID: id, Lease: lease}
	}
	if !SortHeld(hs) {
		t.Fatalf("receipts name one message twice: %q", receipts)
	}
	return hs
}

// receiveAcking applies a leasing receive of user that acknowledges acks.
func (m *machine) receiveAcking(queue, user string, max int, acks ...string) (receiveResult, error) {
	m.t.Helper()
	return decodeReceiveResult(m.apply(EncodeReceive(Receive{Queue: queue, User: user, AckTimeoutMs: 1000, Max: max, Acks: heldOfReceipts(m.t, acks...)})))
}

func TestStateMachine_Apply_ReceiveAcks(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	for _, b := range []string{"one", "two", "three", "four"} {
		m.send("q", "alice", "", b)
	}
	one := m.mustReceive("q", "bob", "", 1000, "one")

	rr, err := m.receiveAcking("q", "bob", 0, one.Receipt)
	if err != nil || !rr.found || string(rr.msg.Body) != "two" {
		t.Fatalf("receive acking one = %+v, %v; want two", rr, err)
	}
	two := rr.msg
	wantCode(t, m.ack("q", "bob", one.Receipt), errs.Conflict) // already acknowledged
	if infos, _ := List(m.mem); infos[0].Messages != 3 || infos[0].InFlight != 1 {
		t.Fatalf("after acking one: %+v, want 3 messages, 1 in flight", infos[0])
	}

	t.Run("all or none", func(t *testing.T) {
		before := m.snapshot()
		for name, tc := range map[string]struct {
			user    string
			acks    []string
			refused string
		}{
			"an acknowledged receipt": {"bob", []string{two.Receipt, one.Receipt}, one.Receipt},
			"someone else's lease":    {"carol", []string{two.Receipt}, two.Receipt},
		} {
			_, err := m.receiveAcking("q", tc.user, 0, tc.acks...)
			wantCode(t, err, errs.Conflict)
			if !strings.Contains(err.Error(), "ack "+tc.refused) {
				t.Errorf("%s: %v does not name the receipt %s", name, err, tc.refused)
			}
			if after := m.snapshot(); !maps.Equal(before, after) {
				t.Fatalf("%s: a refused receive changed the state", name)
			}
		}
	})
	t.Run("a lapsed lease", func(t *testing.T) {
		before := m.snapshot()
		m.now += 1001
		_, err := m.receiveAcking("q", "bob", 0, two.Receipt)
		wantCode(t, err, errs.Conflict)
		if after := m.snapshot(); !maps.Equal(before, after) {
			t.Fatal("a refused receive changed the state")
		}
	})
	t.Run("many at once, then nothing left", func(t *testing.T) {
		rr, err := decodeReceiveResult(m.apply(EncodeReceive(Receive{Queue: "q", User: "bob", AckTimeoutMs: 1000, Max: 5})))
		if err != nil || len(rr.msgs) != 3 {
			t.Fatalf("receive many = %+v, %v; want two, three, four", rr.msgs, err)
		}
		var receipts []string
		for _, msg := range rr.msgs {
			receipts = append(receipts, msg.Receipt)
		}
		rr, err = m.receiveAcking("q", "bob", 5, receipts...)
		if err != nil || len(rr.msgs) != 0 {
			t.Fatalf("receive acking all = %+v, %v; want nothing taken", rr.msgs, err)
		}
		if infos, _ := List(m.mem); infos[0].Messages != 0 || infos[0].InFlight != 0 {
			t.Fatalf("after acking all: %+v", infos[0])
		}
		if keys := m.messageKeysUnder("q/q/"); len(keys) != 0 {
			t.Fatalf("keys left after acking everything: %q", keys)
		}
	})
}

// An ack on receive that finishes a FIFO group's active message lets the
// same receive take the group's next one.
func TestStateMachine_Apply_ReceiveAcksReleasesGroup(t *testing.T) {
	m := newMachine(t)
	m.create("q", "alice")
	for _, b := range []string{"g1", "g2"} {
		if _, _, err := decodeSendResult(m.apply(EncodeSend(Send{Queue: "q", User: "alice", SendOptions: SendOptions{Group: "g"}, Body: []byte(b)}))); err != nil {
			t.Fatal(err)
		}
	}
	g1 := m.mustReceive("q", "bob", "", 1000, "g1")
	if rr := m.receive("q", "bob", "", 1000); rr.found {
		t.Fatalf("g2 delivered while g1 is leased: %+v", rr.msg)
	}
	rr, err := m.receiveAcking("q", "bob", 0, g1.Receipt)
	if err != nil || !rr.found || string(rr.msg.Body) != "g2" {
		t.Fatalf("receive acking g1 = %+v, %v; want g2", rr, err)
	}
}
