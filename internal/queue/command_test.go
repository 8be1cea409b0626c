package queue

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// encode encodes any command, for tests.
func encode(c Command) []byte { return Encode(c) }

func TestEncode_DecodeCommand(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
	}{
		{"create", Create{Queue: "jobs", User: "alice"}},
		{"create anonymous", Create{Queue: "j.o-b_s", User: ""}},
		{"delete", Delete{Queue: "jobs", User: "alice"}},
		{"delete admin", Delete{Queue: "jobs", User: "root", Admin: true}},
		{"send anyone", Send{Queue: "jobs", User: "alice", Body: []byte("hi")}},
		{"send to", Send{Queue: "jobs", User: "alice", To: "Bob", Body: []byte{0, 1, 255}}},
		{"receive", Receive{Queue: "jobs", User: "bob"}},
		{"receive from leased", Receive{Queue: "jobs", User: "bob", From: "alice", AckTimeoutMs: 30000}},
		{"receive longest lease", Receive{Queue: "q", User: "b", AckTimeoutMs: MaxAckTimeoutMs}},
		{"ack", Ack{Queue: "jobs", User: "bob", ID: 1, Lease: 1 << 50}},
		{"longest names", Create{Queue: strings.Repeat("q", MaxNameLen), User: strings.Repeat("u", MaxNameLen)}},
		{"create with settings", Create{Queue: "jobs", User: "alice", Settings: SettingsUpdate{Set: SetMaxDeliveries | SetDeadLetter, Settings: Settings{MaxDeliveries: 3, DeadLetter: "dlq"}}}},
		{"send with options", Send{Queue: "jobs", User: "alice", SendOptions: SendOptions{Priority: 9, DelayMs: 5, TTLMs: 7, Group: "g-1"}, Body: []byte("x")}},
		{"send at", Send{Queue: "jobs", User: "alice", SendOptions: SendOptions{DeliverAtMs: t0}, Body: []byte("x")}},
		{"batch", SendBatch{Queue: "jobs", User: "alice", Messages: []Send{{To: "bob", Body: []byte("a")}, {SendOptions: SendOptions{Priority: 1, Group: "g"}, Body: []byte("b")}}}},
		{"receive many", Receive{Queue: "jobs", User: "bob", AckTimeoutMs: 5, Max: MaxBatch}},
		{"receive acking one", Receive{Queue: "jobs", User: "bob", AckTimeoutMs: 5, Acks: []Held{{ID: 7, Lease: 9}}}},
		{"receive many acking", Receive{Queue: "jobs", User: "bob", From: "al", Max: 3, Acks: []Held{{ID: 1, Lease: 1 << 40}, {ID: 2, Lease: 3}, {ID: 1 << 50, Lease: 2}}}},
		{"nack", Nack{Queue: "jobs", User: "bob", ID: 2, Lease: 3, DelayMs: 100, Dead: true, Reason: "bad input"}},
		{"extend", Extend{Queue: "jobs", User: "bob", ID: 2, Lease: 3, AckTimeoutMs: 1000}},
		{"configure", Configure{Queue: "jobs", User: "alice", Admin: true, Settings: SettingsUpdate{Set: setAll, Settings: Settings{MaxDeliveries: 1, DeadLetter: "d", TTLMs: 2, MaxLength: 3, DropOldest: true}}}},
		{"purge", Purge{Queue: "jobs", User: "alice"}},
		{"redrive", Redrive{Queue: "dlq", User: "alice", Admin: true, Max: 10, To: "jobs"}},
		{"import", Import{Queue: "dlq", Source: "jobs", Incarnation: 4, Entries: []ImportEntry{{Seq: 7, Record: (&messageRecord{sender: "a", origin: "jobs", deadReason: reasonLimit, body: []byte("x")}).encode()}}}},
		{"out done", OutDone{Queue: "jobs", Through: 9, Dropped: true, Incarnation: 3}},
		{"tick", Tick{Queue: "jobs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := encode(tc.cmd)
			if enc[0] != Tag {
				t.Fatalf("first byte = %q, want %q", enc[0], Tag)
			}
			got, err := DecodeCommand(enc)
			if err != nil {
				t.Fatalf("DecodeCommand: %v", err)
			}
			if !reflect.DeepEqual(got, tc.cmd) {
				t.Fatalf("round trip = %#v, want %#v", got, tc.cmd)
			}
		})
	}
}

func TestDecodeCommand_Errors(t *testing.T) {
	long := strings.Repeat("q", MaxNameLen+1)
	cases := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"tag only", []byte{Tag}},
		{"wrong tag", []byte{'K', opCreate, 0, 1, 'q', 0}},
		{"unknown op", []byte{Tag, 'Z', 0, 1, 'q', 0}},
		{"flags on create", []byte{Tag, opCreate, flagAdmin, 1, 'q', 0}},
		{"unknown delete flag", []byte{Tag, opDelete, 0x82, 1, 'q', 0}},
		{"empty queue", []byte{Tag, opCreate, 0, 0, 0}},
		{"queue with slash", []byte{Tag, opCreate, 0, 3, 'a', '/', 'b', 0}},
		{"queue with bang", []byte{Tag, opCreate, 0, 2, '!', 'b', 0}},
		{"queue too long", EncodeCreate(Create{Queue: long})},
		{"user with slash", EncodeCreate(Create{Queue: "q", User: "a/b"})},
		{"user too long", EncodeCreate(Create{Queue: "q", User: long})},
		{"missing user", []byte{Tag, opCreate, 0, 1, 'q'}},
		{"truncated name", []byte{Tag, opCreate, 0, 5, 'q'}},
		{"huge length", []byte{Tag, opCreate, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"non-minimal varint", []byte{Tag, opCreate, 0, 0x81, 0x00, 'q', 0}},
		{"create trailing", []byte{Tag, opCreate, 0, 1, 'q', 0, 'x'}},
		{"delete trailing", []byte{Tag, opDelete, 0, 1, 'q', 0, 'x'}},
		{"send empty body", EncodeSend(Send{Queue: "q", User: "a"})},
		{"send bad receiver", EncodeSend(Send{Queue: "q", User: "a", To: "b c", Body: []byte("x")})},
		{"send missing receiver", []byte{Tag, opSend, 0, 1, 'q', 0}},
		{"receive bad sender", EncodeReceive(Receive{Queue: "q", User: "a", From: "ü"})},
		{"receive negative timeout", EncodeReceive(Receive{Queue: "q", User: "a", AckTimeoutMs: -1})},
		{"receive huge timeout", EncodeReceive(Receive{Queue: "q", User: "a", AckTimeoutMs: MaxAckTimeoutMs + 1})},
		{"receive missing timeout", []byte{Tag, opReceive, 0, 1, 'q', 0, 0}},
		{"receive trailing", append(EncodeReceive(Receive{Queue: "q", User: "a"}), 0)},
		{"ack zero id", EncodeAck(Ack{Queue: "q", User: "a", ID: 0, Lease: 1})},
		{"ack zero lease", EncodeAck(Ack{Queue: "q", User: "a", ID: 1, Lease: 0})},
		{"ack missing lease", []byte{Tag, opAck, 0, 1, 'q', 0, 1}},
		{"ack trailing", append(EncodeAck(Ack{Queue: "q", User: "a", ID: 1, Lease: 1}), 1)},
		{"priority above 9", EncodeSend(Send{Queue: "q", User: "a", SendOptions: SendOptions{Priority: 10}, Body: []byte("x")})},
		{"delay and deliver at", EncodeSend(Send{Queue: "q", User: "a", SendOptions: SendOptions{DelayMs: 1, DeliverAtMs: 2}, Body: []byte("x")})},
		{"group with slash", EncodeSend(Send{Queue: "q", User: "a", SendOptions: SendOptions{Group: "a/b"}, Body: []byte("x")})},
		{"options flag without options", []byte{Tag, opSend, flagMore, 1, 'q', 0, 0, 0, 0, 0, 0, 0, 'x'}},
		{"empty batch", EncodeSendBatch(SendBatch{Queue: "q", User: "a"})},
		{"batch empty body", EncodeSendBatch(SendBatch{Queue: "q", User: "a", Messages: []Send{{}}})},
		{"batch too big", EncodeSendBatch(SendBatch{Queue: "q", User: "a", Messages: make([]Send, MaxBatch+1)})},
		{"receive max 1 flagged", append(EncodeReceive(Receive{Queue: "q", User: "a"})[:0:0], Tag, opReceive, flagMore, 1, 'q', 0, 0, 0, 1)},
		{"receive max above batch", EncodeReceive(Receive{Queue: "q", User: "a", Max: MaxBatch + 1})},
		{"receive acks out of order", EncodeReceive(Receive{Queue: "q", User: "a", Acks: []Held{{ID: 2, Lease: 1}, {ID: 1, Lease: 1}}})},
		{"receive acks one message twice", EncodeReceive(Receive{Queue: "q", User: "a", Acks: []Held{{ID: 2, Lease: 1}, {ID: 2, Lease: 3}}})},
		{"receive ack zero lease", EncodeReceive(Receive{Queue: "q", User: "a", Acks: []Held{{ID: 2, Lease: 0}}})},
		{"receive acks above batch", EncodeReceive(Receive{Queue: "q", User: "a", Acks: heldRun(MaxBatch + 1)})},
		{"receive ack flag, no acks", []byte{Tag, opReceive, flagAck, 1, 'q', 0, 0, 0, 0}},
		{"receive ack flag, acks missing", []byte{Tag, opReceive, flagAck, 1, 'q', 0, 0, 0, 2, 1, 1}},
		{"ack flag on send", []byte{Tag, opSend, flagAck, 1, 'q', 0, 0, 'x'}},
		{"ack flag on ack", append([]byte{Tag, opAck, flagAck}, EncodeAck(Ack{Queue: "q", User: "a", ID: 1, Lease: 1})[3:]...)},
		{"nack reason too long", EncodeNack(Nack{Queue: "q", User: "a", ID: 1, Lease: 1, Reason: strings.Repeat("r", MaxReasonLen+1)})},
		{"extend zero timeout", EncodeExtend(Extend{Queue: "q", User: "a", ID: 1, Lease: 1})},
		{"configure nothing", EncodeConfigure(Configure{Queue: "q", User: "a"})},
		{"configure outside mask", EncodeConfigure(Configure{Queue: "q", User: "a", Settings: SettingsUpdate{Set: SetTTL, Settings: Settings{MaxLength: 3}}})},
		{"admin flag on send", []byte{Tag, opSend, flagAdmin, 1, 'q', 0, 0, 'x'}},
		{"redrive zero", EncodeRedrive(Redrive{Queue: "q", User: "a"})},
		{"import leased record", EncodeImport(Import{Queue: "q", Source: "s", Entries: []ImportEntry{{Seq: 1, Record: (&messageRecord{state: stateLeased, body: []byte("x")}).encode()}}})},
		{"import without source", EncodeImport(Import{Queue: "q", Entries: []ImportEntry{{Seq: 1, Record: (&messageRecord{body: []byte("x")}).encode()}}})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := DecodeCommand(tc.in); err == nil {
				t.Fatalf("DecodeCommand(% x) = %#v, want error", tc.in, c)
			}
		})
	}
}

// heldRun returns n leases with IDs 1..n, in the order EncodeReceive needs.
func heldRun(n int) []Held {
	hs := make([]Held, n)
	for i := range hs {
		hs[i] = Held{ID: uint64(i + 1), Lease: 1}
	}
	return hs
}

func TestSortHeld(t *testing.T) {
	hs := []Held{{ID: 9, Lease: 1}, {ID: 2, Lease: 5}, {ID: 4, Lease: 1}}
	if !SortHeld(hs) || !reflect.DeepEqual(hs, []Held{{ID: 2, Lease: 5}, {ID: 4, Lease: 1}, {ID: 9, Lease: 1}}) {
		t.Fatalf("SortHeld = %v", hs)
	}
	if SortHeld([]Held{{ID: 3, Lease: 1}, {ID: 1, Lease: 1}, {ID: 3, Lease: 2}}) {
		t.Fatal("SortHeld accepted one message twice")
	}
}

func TestTouchedKey(t *testing.T) {
	cases := []struct {
		name string
		cmd  []byte
		want string
		ok   bool
	}{
		{"send", EncodeSend(Send{Queue: "jobs", User: "a", Body: []byte("x")}), "jobs", true},
		{"delete", EncodeDelete(Delete{Queue: "jobs", User: "a"}), "jobs", true},
		{"create", EncodeCreate(Create{Queue: "jobs", User: "a"}), "", false},
		{"receive", EncodeReceive(Receive{Queue: "jobs", User: "a"}), "", false},
		{"receive acking: may release the next message of a group", EncodeReceive(Receive{Queue: "jobs", User: "a", Acks: []Held{{ID: 1, Lease: 1}}}), "jobs", true},
		{"ack: may release the next message of a group", EncodeAck(Ack{Queue: "jobs", User: "a", ID: 1, Lease: 1}), "jobs", true},
		{"nack", EncodeNack(Nack{Queue: "jobs", User: "a", ID: 1, Lease: 1}), "jobs", true},
		{"batch", EncodeSendBatch(SendBatch{Queue: "jobs", User: "a", Messages: []Send{{Body: []byte("x")}}}), "jobs", true},
		{"import", EncodeImport(Import{Queue: "jobs", Source: "src", Incarnation: 1, Entries: []ImportEntry{{Seq: 1, Record: (&messageRecord{sender: "a", body: []byte("x")}).encode()}}}), "jobs", true},
		{"extend", EncodeExtend(Extend{Queue: "jobs", User: "a", ID: 1, Lease: 1, AckTimeoutMs: 5}), "", false},
		{"purge", EncodePurge(Purge{Queue: "jobs", User: "a"}), "", false},
		{"other domain", []byte{'K', opSend, 0, 1, 'q'}, "", false},
		{"malformed", []byte{Tag, opSend, 0, 9, 'q'}, "", false},
		{"short", []byte{Tag}, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if q, ok := TouchedKey(tc.cmd); q != tc.want || ok != tc.ok {
				t.Fatalf("TouchedKey = (%q, %v), want (%q, %v)", q, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestReceipt(t *testing.T) {
	r := FormatReceipt(7, 1234)
	if len(r) != receiptLen {
		t.Fatalf("receipt %q has length %d, want %d", r, len(r), receiptLen)
	}
	if id, lease, ok := ParseReceipt(r); !ok || id != 7 || lease != 1234 {
		t.Fatalf("ParseReceipt(%q) = (%d, %d, %v)", r, id, lease, ok)
	}
	for _, bad := range []string{"", "x", r + "A", r[:21] + "!", FormatReceipt(0, 1), FormatReceipt(1, 0), r[:21] + "B"} {
		if id, lease, ok := ParseReceipt(bad); ok {
			t.Errorf("ParseReceipt(%q) = (%d, %d, true), want false", bad, id, lease)
		}
	}
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add(EncodeCreate(Create{Queue: "q", User: "alice"}))
	f.Add(EncodeDelete(Delete{Queue: "q", User: "alice", Admin: true}))
	f.Add(EncodeSend(Send{Queue: "q", User: "alice", To: "bob", Body: []byte("hello")}))
	f.Add(EncodeReceive(Receive{Queue: "q", User: "bob", From: "alice", AckTimeoutMs: 1000}))
	f.Add(EncodeReceive(Receive{Queue: "q", User: "bob", Max: 2, Acks: []Held{{ID: 1, Lease: 4}, {ID: 3, Lease: 4}}}))
	f.Add(EncodeAck(Ack{Queue: "q", User: "bob", ID: 3, Lease: 300}))
	f.Add([]byte{Tag, opSend, 0xff})
	f.Add(EncodeSendBatch(SendBatch{Queue: "q", User: "a", Messages: []Send{{Body: []byte("x"), SendOptions: SendOptions{Group: "g"}}}}))
	f.Add(EncodeNack(Nack{Queue: "q", User: "a", ID: 1, Lease: 2, Reason: "r"}))
	f.Add(EncodeConfigure(Configure{Queue: "q", User: "a", Settings: SettingsUpdate{Set: SetDeadLetter, Settings: Settings{DeadLetter: "d"}}}))
	f.Add(EncodeImport(Import{Queue: "q", Source: "s", Entries: []ImportEntry{{Seq: 1, Record: (&messageRecord{body: []byte("x")}).encode()}}}))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCommand(in)
		if err != nil {
			return
		}
		// Only canonical encodings decode, so they re-encode to the input.
		if enc := encode(c); !bytes.Equal(enc, in) {
			t.Fatalf("re-encoding % x gives % x", in, enc)
		}
		if q, ok := TouchedKey(in); ok {
			if s, isSend := c.(Send); isSend && s.Queue != q {
				t.Fatalf("TouchedKey = %q, command names %q", q, s.Queue)
			}
		}
	})
}

func FuzzParseReceipt(f *testing.F) {
	f.Add(FormatReceipt(1, 2))
	f.Add("AAAAAAAAAAEAAAAAAAAAAg")
	f.Fuzz(func(t *testing.T, s string) {
		id, lease, ok := ParseReceipt(s)
		if ok && FormatReceipt(id, lease) != s {
			t.Fatalf("ParseReceipt(%q) accepts a non-canonical receipt", s)
		}
	})
}

func BenchmarkDecodeCommand(b *testing.B) {
	cmd := EncodeSend(Send{Queue: "jobs", User: "alice", To: "bob", Body: bytes.Repeat([]byte("x"), 200)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommand(cmd); err != nil {
			b.Fatal(err)
		}
	}
}
