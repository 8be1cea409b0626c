package link

import (
	"bytes"
	"reflect"
	"testing"
)

func encode(t testing.TB, c Command) []byte {
	t.Helper()
	switch c := c.(type) {
	case Create:
		return EncodeCreate(c)
	case Delete:
		return EncodeDelete(c)
	case AddHits:
		return EncodeAddHits(c)
	}
	t.Fatalf("unexpected command %T", c)
	return nil
}

func TestEncode_DecodeCommand(t *testing.T) {
	cases := []struct {
		name string
		cmd  Command
	}{
		{"create", Create{Code: "abc1234", CreatedBy: "Alice", URL: "https://example.com/x?y=1"}},
		{"delete", Delete{Code: "abc", User: "bob"}},
		{"delete admin", Delete{Code: "a-b_c", User: "root", Admin: true}},
		{"hits one", AddHits{Hits: []CodeHits{{"a", 1}}}},
		{"hits many", AddHits{Hits: []CodeHits{{"A", 300}, {"B", 1 << 40}, {"a", 2}}}},
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
	cases := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"tag only", []byte{Tag}},
		{"wrong tag", []byte{'K', opCreate, 1, 'a', 1, 'u', 'h'}},
		{"unknown op", []byte{Tag, 'Z'}},
		{"create empty code", []byte{Tag, opCreate, 0, 1, 'u', 'h'}},
		{"create empty user", []byte{Tag, opCreate, 1, 'a', 0, 'h'}},
		{"create empty url", []byte{Tag, opCreate, 1, 'a', 1, 'u'}},
		{"create code too long", []byte{Tag, opCreate, 9, 'a'}},
		{"create non-minimal", []byte{Tag, opCreate, 0x81, 0, 'a', 1, 'u', 'h'}},
		{"delete no flags", []byte{Tag, opDelete}},
		{"delete unknown flag", []byte{Tag, opDelete, 2, 1, 'u', 'c'}},
		{"delete empty code", []byte{Tag, opDelete, 0, 1, 'u'}},
		{"hits zero entries", []byte{Tag, opAddHits, 0}},
		{"hits huge count", []byte{Tag, opAddHits, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 'a', 1}},
		{"hits zero n", []byte{Tag, opAddHits, 1, 1, 'a', 0}},
		{"hits unsorted", []byte{Tag, opAddHits, 2, 1, 'b', 1, 1, 'a', 1}},
		{"hits duplicate", []byte{Tag, opAddHits, 2, 1, 'a', 1, 1, 'a', 1}},
		{"hits trailing", []byte{Tag, opAddHits, 1, 1, 'a', 1, 'x', 'y', 'z'}},
		{"hits truncated", []byte{Tag, opAddHits, 2, 1, 'a', 1, 1, 'b'}},
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
	f.Add(EncodeCreate(Create{Code: "abc", CreatedBy: "alice", URL: "https://x"}))
	f.Add(EncodeDelete(Delete{Code: "abc", User: "alice", Admin: true}))
	f.Add(EncodeAddHits(AddHits{Hits: []CodeHits{{"a", 1}, {"b", 1000}}}))
	f.Add([]byte{Tag, opAddHits, 0xff})
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
	f.Add(append([]byte{statusOK}, encodeRecord(record{createdMs: 1, createdBy: "a", url: "https://x"})...))
	f.Add(hitsResult(3))
	f.Add([]byte{statusForbidden})
	f.Add([]byte{statusInvalid, 'x'})
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = decodeRecordResult(in)
		_ = decodeDeleteResult(in)
		_, _ = decodeHitsResult(in)
	})
}

// FuzzDecodeRecord: a stored record that decodes re-encodes to the same
// bytes.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(record{createdMs: 5, hits: 9, createdBy: "alice", url: "https://example.com"}))
	f.Fuzz(func(t *testing.T, in []byte) {
		if r, err := decodeRecord(in); err == nil && !bytes.Equal(encodeRecord(r), in) {
			t.Fatalf("record % x re-encodes to % x", in, encodeRecord(r))
		}
	})
}

func BenchmarkDecodeCommand_AddHits(b *testing.B) {
	hits := make([]CodeHits, 0, 1000)
	for i := range 1000 {
		hits = append(hits, CodeHits{Code: base62Code(uint64(i) * 7919), N: uint64(i + 1)})
	}
	cmd := EncodeAddHits(AddHits{Hits: sortedHits(hits)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommand(cmd); err != nil {
			b.Fatal(err)
		}
	}
}
