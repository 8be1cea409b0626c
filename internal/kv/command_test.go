package kv

import (
	"bytes"
	"reflect"
	"testing"
)

func TestEncodePut_DecodeCommand(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
	}{
		{"put", Put{Key: "a", Value: []byte("v")}},
		{"put empty value", Put{Key: "a/b/c", Value: []byte{}}},
		{"put cas", Put{Key: "k", Value: []byte("v"), IfVersion: 1 << 40}},
		{"put if absent", Put{Key: "k", Value: []byte("v"), IfAbsent: true}},
		{"put binary", Put{Key: "\x00\xff", Value: []byte{0, 1, 2, 255}}},
		{"delete", Delete{Key: "a"}},
		{"delete cas", Delete{Key: "a", IfVersion: 7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var enc []byte
			switch c := tc.cmd.(type) {
			case Put:
				enc = EncodePut(c)
			case Delete:
				enc = EncodeDelete(c)
			}
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
	cases := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"tag only", []byte{Tag}},
		{"wrong tag", []byte{'X', opPut, 0, 1, 'a'}},
		{"unknown op", []byte{Tag, 'Z', 0, 1, 'a'}},
		{"unknown put flag", []byte{Tag, opPut, 0x80, 1, 'a'}},
		{"if-absent on delete", []byte{Tag, opDelete, flagIfAbsent, 1, 'a'}},
		{"empty key", []byte{Tag, opPut, 0, 0}},
		{"key too long", []byte{Tag, opPut, 0, 5, 'a'}},
		{"huge key length", []byte{Tag, opPut, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"truncated varint", []byte{Tag, opPut, 0, 0x80}},
		{"non-minimal varint", []byte{Tag, opPut, 0, 0x81, 0x00, 'a'}},
		{"flagged zero version", []byte{Tag, opPut, flagIfVersion, 0, 1, 'a'}},
		{"missing version", []byte{Tag, opDelete, flagIfVersion}},
		{"cas and absent", []byte{Tag, opPut, flagIfVersion | flagIfAbsent, 3, 1, 'a'}},
		{"delete trailing", []byte{Tag, opDelete, 0, 1, 'a', 'b'}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := DecodeCommand(tc.in); err == nil {
				t.Fatalf("DecodeCommand(% x) = %#v, want error", tc.in, c)
			}
		})
	}
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add(EncodePut(Put{Key: "a", Value: []byte("v")}))
	f.Add(EncodePut(Put{Key: "k", Value: []byte("v"), IfVersion: 300}))
	f.Add(EncodePut(Put{Key: "k", IfAbsent: true}))
	f.Add(EncodeDelete(Delete{Key: "a", IfVersion: 2}))
	f.Add([]byte{Tag, opPut, 0xff})
	for _, c := range allCommands {
		f.Add(encodeCommand(f, c))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCommand(in)
		if err != nil {
			return
		}
		// Only canonical encodings decode, so they re-encode to the input.
		if enc := encodeCommand(t, c); !bytes.Equal(enc, in) {
			t.Fatalf("re-encoding % x gives % x", in, enc)
		}
	})
}

func BenchmarkEncodePut(b *testing.B) {
	p := Put{Key: "users/alice/settings", Value: bytes.Repeat([]byte("x"), 256), IfVersion: 42}
	b.ReportAllocs()
	for b.Loop() {
		EncodePut(p)
	}
}

func BenchmarkDecodeCommand(b *testing.B) {
	cmd := EncodePut(Put{Key: "users/alice/settings", Value: bytes.Repeat([]byte("x"), 256), IfVersion: 42})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommand(cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// allCommands has one of each command, with its optional fields set.
var allCommands = []Command{
	Put{Key: "k", Value: []byte("v"), IfVersion: 3, TTLMs: 5000, Keep: 4},
	Put{Key: "k", Value: []byte("v"), IfAbsent: true, Lease: 1<<LeaseShift | 2, LeaseDeadlineMs: 99},
	Delete{Key: "k", IfVersion: 2, Keep: 7},
	Txn{
		Compare: []Compare{{Key: "a", Version: 0}, {Key: "b", ByValue: true, Value: []byte("x")}},
		Success: []Op{{Type: OpPut, Key: "a", Value: []byte("1"), TTLMs: 1000}, {Type: OpGet, Key: "b"}},
		Failure: []Op{{Type: OpDelete, Key: "a"}, {Type: OpPut, Key: "c", Lease: 9, LeaseDeadlineMs: 8}},
		Keep:    3,
	},
	Expire{}, Expire{Keep: 2},
	Grant{TTLMs: 1000}, Attach{Lease: 5, Partition: 2}, KeepAlive{Lease: 5},
	Revoke{Lease: 5}, Revoke{Lease: 5, DeadlineMs: 77, Keep: 3}, Extend{Lease: 5, DeadlineMs: 6},
}

func encodeCommand(t testing.TB, c Command) []byte {
	switch c := c.(type) {
	case Put:
		return EncodePut(c)
	case Delete:
		return EncodeDelete(c)
	case Txn:
		return EncodeTxn(c)
	case Expire:
		return EncodeExpire(c)
	case Grant:
		return EncodeGrant(c)
	case Attach:
		return EncodeAttach(c)
	case KeepAlive:
		return EncodeKeepAlive(c)
	case Revoke:
		return EncodeRevoke(c)
	case Extend:
		return EncodeExtend(c)
	}
	t.Fatalf("unexpected command %T", c)
	return nil
}

func TestEncode_DecodeCommand_All(t *testing.T) {
	for _, c := range allCommands {
		got, err := DecodeCommand(encodeCommand(t, c))
		if err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("round trip of %#v = %#v, %v", c, got, err)
		}
	}
}
