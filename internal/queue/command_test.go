package queue

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// encode encodes any command, for tests.
func encode(c Command) []byte {
	switch c := c.(type) {
	case Create:
		return EncodeCreate(c)
	case Delete:
		return EncodeDelete(c)
	case Send:
		return EncodeSend(c)
	case Receive:
		return EncodeReceive(c)
	case Ack:
		return EncodeAck(c)
	}
	panic("unknown command")
}

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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := DecodeCommand(tc.in); err == nil {
				t.Fatalf("DecodeCommand(% x) = %#v, want error", tc.in, c)
			}
		})
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
		{"ack", EncodeAck(Ack{Queue: "jobs", User: "a", ID: 1, Lease: 1}), "", false},
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
	f.Add(EncodeAck(Ack{Queue: "q", User: "bob", ID: 3, Lease: 300}))
	f.Add([]byte{Tag, opSend, 0xff})
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
