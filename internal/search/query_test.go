package search

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want Query
	}{
		{"hello", Query{Words: []string{"hello"}}},
		{"  two   words ", Query{Words: []string{"two", "words"}}},
		{`say "exact  phrase" here`, Query{Words: []string{"say", "here"}, Phrases: []string{"exact phrase"}}},
		{`"unterminated phrase`, Query{Phrases: []string{"unterminated phrase"}}},
		{`"" empty`, Query{Words: []string{"empty"}}},
		{"from:@Ann IN:#General deploy", Query{Words: []string{"deploy"}, From: "ann", Room: "general"}},
		{"from:ann from:ANN", Query{From: "ann"}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := Parse(c.in)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			}
		})
	}
	for _, bad := range []string{"from:", "in:#", "from:ann from:bob", "in:a in:b", strings.Repeat("x", MaxQueryBytes+1),
		strings.Repeat("w ", MaxTerms+1), "\xff"} {
		if _, err := Parse(bad); !errs.Is(err, errs.Invalid) {
			t.Errorf("Parse(%.30q) = %v, want invalid", bad, err)
		}
	}
}

func TestParseRequest(t *testing.T) {
	spec, err := ParseRequest(Request{Q: "x", Room: "Ops", From: "@bob", After: "2026-01-02T03:04:05Z", Before: "1800000000000", Limit: 5})
	if err != nil || spec.Query.Room != "ops" || spec.Query.From != "bob" || spec.After != 1767323045000 || spec.Before != 1800000000000 || spec.Limit != 5 {
		t.Fatalf("spec = %+v, %v", spec, err)
	}
	if spec, _ := ParseRequest(Request{Q: "x"}); spec.Limit != DefaultLimit {
		t.Fatalf("default limit = %d", spec.Limit)
	}
	for _, bad := range []Request{{}, {Q: "   "}, {Q: "x", Limit: MaxLimit + 1}, {Q: "x", Limit: -1},
		{Q: "x", After: "yesterday"}, {Q: "in:a", Room: "b"}, {Q: "from:a", From: "b"}} {
		if _, err := ParseRequest(bad); !errs.Is(err, errs.Invalid) {
			t.Errorf("ParseRequest(%+v) = %v, want invalid", bad, err)
		}
	}
}

// FuzzParse: the parser never panics, and what it accepts stays in bounds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a b", `"x y" from:z in:w`, `"`, "from:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := Parse(s)
		if err == nil && len(q.Words)+len(q.Phrases) > MaxTerms {
			t.Fatalf("%q: %d terms", s, len(q.Words)+len(q.Phrases))
		}
	})
}
