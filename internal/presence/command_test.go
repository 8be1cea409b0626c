package presence

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func encode(t testing.TB, c Command) []byte {
	t.Helper()
	switch c := c.(type) {
	case Renew:
		return EncodeRenew(c)
	case Release:
		return EncodeRelease(c)
	case Expire:
		return EncodeExpire(c)
	}
	t.Fatalf("unexpected command %T", c)
	return nil
}

func TestEncode_DecodeCommand(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
	}{
		{"renew one", Renew{Node: "n1", TTLMs: 11000, Users: []string{"alice"}}},
		{"renew many", Renew{Node: "node-2.zone", TTLMs: 1, Users: []string{"Bob", "alice", "bob", "carol"}}},
		{"renew max ttl", Renew{Node: "n", TTLMs: uint64(MaxTTL.Milliseconds()), Users: []string{"x"}}},
		{"release", Release{Node: "n3", Users: []string{"a", "b"}}},
		{"expire", Expire{Limit: 1000}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			enc := encode(t, tc.cmd)
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
	long := strings.Repeat("u", MaxNameLen+1)
	cases := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"tag only", []byte{Tag}},
		{"wrong tag", []byte{'L', opExpire, 1}},
		{"unknown op", []byte{Tag, 'Z'}},
		{"renew empty node", []byte{Tag, opRenew, 0, 1, 1, 1, 'a'}},
		{"renew zero ttl", []byte{Tag, opRenew, 1, 'n', 0, 1, 1, 'a'}},
		{"renew ttl over max", EncodeRenew(Renew{Node: "n", TTLMs: uint64(MaxTTL.Milliseconds()) + 1, Users: []string{"a"}})},
		{"renew no users", []byte{Tag, opRenew, 1, 'n', 1, 0}},
		{"renew empty user", []byte{Tag, opRenew, 1, 'n', 1, 1, 0}},
		{"renew user too long", EncodeRenew(Renew{Node: "n", TTLMs: 1, Users: []string{long}})},
		{"renew unsorted", []byte{Tag, opRenew, 1, 'n', 1, 2, 1, 'b', 1, 'a'}},
		{"renew duplicate", []byte{Tag, opRenew, 1, 'n', 1, 2, 1, 'a', 1, 'a'}},
		{"renew trailing", []byte{Tag, opRenew, 1, 'n', 1, 1, 1, 'a', 'x'}},
		{"renew truncated", []byte{Tag, opRenew, 1, 'n', 1, 2, 1, 'a', 1}},
		{"renew huge count", []byte{Tag, opRenew, 1, 'n', 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 'a'}},
		{"renew non-minimal", []byte{Tag, opRenew, 1, 'n', 0x81, 0, 1, 1, 'a'}},
		{"release no node", []byte{Tag, opRelease}},
		{"release no users", []byte{Tag, opRelease, 1, 'n', 0}},
		{"expire zero", []byte{Tag, opExpire, 0}},
		{"expire missing", []byte{Tag, opExpire}},
		{"expire trailing", []byte{Tag, opExpire, 1, 0}},
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
	f.Add(EncodeRenew(Renew{Node: "n1", TTLMs: 11000, Users: []string{"alice", "bob"}}))
	f.Add(EncodeRelease(Release{Node: "n1", Users: []string{"alice"}}))
	f.Add(EncodeExpire(Expire{Limit: 300}))
	f.Add([]byte{Tag, opRenew, 1, 'n', 1, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := DecodeCommand(in)
		if err != nil {
			return
		}
		// Only canonical encodings decode, so they re-encode to the input.
		if enc := encode(t, c); !bytes.Equal(enc, in) {
			t.Fatalf("re-encoding % x gives % x", in, enc)
		}
	})
}

// FuzzDecodeResult feeds arbitrary bytes to the result decoders: they may
// refuse but never panic.
func FuzzDecodeResult(f *testing.F) {
	f.Add(countResult(3))
	f.Add(expireResult(7, true))
	f.Add([]byte{statusInvalid, 'x'})
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = DecodeCountResult(in)
		_, _, _ = DecodeExpireResult(in)
	})
}

func BenchmarkDecodeCommand_Renew(b *testing.B) {
	users := make([]string, 1000)
	for i := range users {
		users[i] = fmt.Sprintf("user%05d", i) // sorted, unique
	}
	cmd := EncodeRenew(Renew{Node: "n1", TTLMs: 11000, Users: users})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommand(cmd); err != nil {
			b.Fatal(err)
		}
	}
}
