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
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCommand(in)
		if err != nil {
			return
		}
		// Only canonical encodings decode, so they re-encode to the input.
		var enc []byte
		switch c := c.(type) {
		case Put:
			enc = EncodePut(c)
		case Delete:
			enc = EncodeDelete(c)
		default:
			t.Fatalf("unexpected command %T", c)
		}
		if !bytes.Equal(enc, in) {
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
