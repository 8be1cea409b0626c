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
	case Update:
		return EncodeUpdate(c)
	case AddVisits:
		return EncodeAddVisits(c)
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
		{"create with settings", Create{Code: "x", CreatedBy: "a", URL: "https://x", Settings: Settings{ExpiresMs: 1 << 42, MaxVisits: 3, Status: 308, Tags: []string{"a", "b"}}}},
		{"create with a tag only", Create{Code: "x", CreatedBy: "a", URL: "https://x", Settings: Settings{Tags: []string{"t"}}}},
		{"update url", Update{Code: "x", User: "a", Fields: FieldURL, URL: "https://y"}},
		{"update all", Update{Code: "x", User: "a", Fields: allFields, URL: "https://y", Settings: Settings{ExpiresMs: 5, MaxVisits: 7, Status: 301, Tags: []string{"q"}}, Disabled: true}},
		{"update clear tags", Update{Code: "x", User: "a", Fields: FieldTags | FieldDisabled}},
		{"visits", AddVisits{Links: []LinkVisits{
			{Code: "a", Days: []DayVisits{{Day: 20000, Humans: 3, Bots: 1}, {Day: 20001, Bots: 2}},
				Referrers: []Count{{"a.example", 1}, {"b.example", 2}}, Browsers: []Count{{"Chrome", 3}}, Systems: []Count{{"Linux", 1}, {"Windows", 2}}},
			{Code: "b", Days: []DayVisits{{Day: 1, Humans: 1}}, Browsers: []Count{{"Other", 1}}, Systems: []Count{{"Other", 1}}},
		}}},
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
		{"create with zero settings", []byte{Tag, opCreateWith, 1, 'a', 1, 'u', 0, 0, 0, 0, 'h'}},
		{"create tags unsorted", []byte{Tag, opCreateWith, 1, 'a', 1, 'u', 0, 0, 0, 2, 1, 'b', 1, 'a', 'h'}},
		{"update no fields", []byte{Tag, opUpdate, 0, 1, 'u', 1, 'c'}},
		{"update unknown field", []byte{Tag, opUpdate, 0x80, 1, 'u', 1, 'c'}},
		{"update disabled 2", []byte{Tag, opUpdate, byte(FieldDisabled), 1, 'u', 1, 'c', 2}},
		{"update trailing", []byte{Tag, opUpdate, byte(FieldMaxVisits), 1, 'u', 1, 'c', 1, 9}},
		{"update status too big", []byte{Tag, opUpdate, byte(FieldStatus), 1, 'u', 1, 'c', 0x80, 0x80, 0x04}},
		{"visits no links", []byte{Tag, opAddVisits, 0}},
		{"visits empty day", []byte{Tag, opAddVisits, 1, 1, 'a', 1, 5, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"visits days unsorted", []byte{Tag, opAddVisits, 1, 1, 'a', 2, 5, 1, 0, 4, 1, 0, 0, 0, 0}},
		{"visits zero count", []byte{Tag, opAddVisits, 1, 1, 'a', 1, 5, 1, 0, 1, 1, 'r', 0, 0, 0, 0, 0}},
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
	f.Add(EncodeCreate(Create{Code: "x", CreatedBy: "a", URL: "https://x", Settings: Settings{MaxVisits: 3, Tags: []string{"a", "b"}}}))
	f.Add(EncodeUpdate(Update{Code: "x", User: "a", Fields: allFields, URL: "https://y", Settings: Settings{Status: 301, Tags: []string{"q"}}, Disabled: true}))
	f.Add(EncodeAddVisits(AddVisits{Links: []LinkVisits{{Code: "a", Days: []DayVisits{{Day: 2, Humans: 1}}, Referrers: []Count{{"r", 1}}, Browsers: []Count{{"b", 1}}, Systems: []Count{{"o", 1}}}}}))
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
// bytes (format 2), or to format 2 bytes that decode to the same record
// (format 1, before the lifecycle fields).
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(record{createdMs: 5, hits: 9, createdBy: "alice", url: "https://example.com"}))
	f.Add(encodeRecord(record{createdMs: 5, hits: 9, bots: 2, createdBy: "a", url: "https://x", referrers: 3,
		settings: settings{expiresMs: 9, maxVisits: 4, status: 307, disabled: true, tags: []string{"a", "b"}}}))
	f.Add(append([]byte{recordFormat1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9, 1, 'a'}, "https://x"...))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := decodeRecord(in)
		if err != nil {
			return
		}
		enc := encodeRecord(r)
		if in[0] == recordFormat2 && !bytes.Equal(enc, in) {
			t.Fatalf("record % x re-encodes to % x", in, enc)
		}
		if again, err := decodeRecord(enc); err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("record %+v re-decodes to %+v, %v", r, again, err)
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
