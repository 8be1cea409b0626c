package link

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/state"
)

func sortedHits(h []CodeHits) []CodeHits {
	slices.SortFunc(h, func(a, b CodeHits) int { return strings.Compare(a.Code, b.Code) })
	return h
}

func create(code, by string) []byte {
	return EncodeCreate(Create{Code: code, CreatedBy: by, URL: "https://example.com/" + code})
}

func del(code, user string, admin bool) []byte {
	return EncodeDelete(Delete{Code: code, User: user, Admin: admin})
}

func hits(h ...CodeHits) []byte { return EncodeAddHits(AddHits{Hits: sortedHits(h)}) }

// applyStep is one command of a TestStateMachine_Apply case and the error
// code its result must decode to ("" for success).
type applyStep struct {
	cmd  []byte
	code errs.Code
}

func resultCode(t *testing.T, cmd, res []byte) errs.Code {
	t.Helper()
	var err error
	switch cmd[1] {
	case opCreate:
		_, err = decodeRecordResult(res)
	case opDelete:
		err = decodeDeleteResult(res)
	default:
		_, err = decodeHitsResult(res)
	}
	return errs.CodeOf(err)
}

func TestStateMachine_Apply(t *testing.T) {
	cases := []struct {
		name     string
		steps    []applyStep
		want     map[string]uint64 // code -> hits of the links left
		wantKeys int               // state keys at the end
	}{
		{
			name:     "create",
			steps:    []applyStep{{create("abc", "Alice"), ""}},
			want:     map[string]uint64{"abc": 0},
			wantKeys: 2,
		},
		{
			name:     "code taken",
			steps:    []applyStep{{create("abc", "alice"), ""}, {create("abc", "bob"), errs.Conflict}},
			want:     map[string]uint64{"abc": 0},
			wantKeys: 2,
		},
		{
			name:     "codes are case-sensitive",
			steps:    []applyStep{{create("abc", "alice"), ""}, {create("ABC", "bob"), ""}},
			want:     map[string]uint64{"abc": 0, "ABC": 0},
			wantKeys: 4,
		},
		{
			name:  "owner deletes in any case",
			steps: []applyStep{{create("abc", "Alice"), ""}, {del("abc", "ALICE", false), ""}},
			want:  map[string]uint64{},
		},
		{
			name:     "stranger may not delete",
			steps:    []applyStep{{create("abc", "alice"), ""}, {del("abc", "bob", false), errs.Forbidden}},
			want:     map[string]uint64{"abc": 0},
			wantKeys: 2,
		},
		{
			name:  "admin deletes",
			steps: []applyStep{{create("abc", "alice"), ""}, {del("abc", "root", true), ""}},
			want:  map[string]uint64{},
		},
		{
			name:  "delete missing",
			steps: []applyStep{{del("abc", "root", true), errs.NotFound}},
			want:  map[string]uint64{},
		},
		{
			name: "hits add up and skip deleted codes",
			steps: []applyStep{
				{create("a", "alice"), ""},
				{create("b", "alice"), ""},
				{hits(CodeHits{"a", 3}, CodeHits{"b", 1}, CodeHits{"gone", 7}), ""},
				{hits(CodeHits{"a", 2}), ""},
			},
			want:     map[string]uint64{"a": 5, "b": 1},
			wantKeys: 4,
		},
		{
			name: "hits saturate",
			steps: []applyStep{
				{create("a", "alice"), ""},
				{hits(CodeHits{"a", math.MaxUint64 - 1}), ""},
				{hits(CodeHits{"a", 5}), ""},
			},
			want:     map[string]uint64{"a": math.MaxUint64},
			wantKeys: 2,
		},
		{
			name:  "malformed",
			steps: []applyStep{{[]byte{Tag, opCreate, 0}, errs.Invalid}},
			want:  map[string]uint64{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := state.NewMem()
			for i, st := range tc.steps {
				res, err := StateMachine{}.Apply(mem, state.Meta{Index: uint64(i + 1), TimeMs: int64(100 + i)}, st.cmd)
				if err != nil {
					t.Fatalf("step %d: Apply: %v", i, err)
				}
				if got := resultCode(t, st.cmd, res); got != st.code {
					t.Fatalf("step %d: result code %q, want %q", i, got, st.code)
				}
			}
			for code, want := range tc.want {
				l, found, err := Get(mem, code)
				if err != nil || !found || l.Hits != want {
					t.Errorf("Get(%q) = (%+v, %v, %v), want %d hits", code, l, found, err, want)
				}
			}
			if mem.Len() != tc.wantKeys {
				t.Errorf("%d state keys, want %d", mem.Len(), tc.wantKeys)
			}
			_ = mem.Scan(nil, nil, func(k, _ []byte) bool {
				if !bytes.HasPrefix(k, []byte("l/")) {
					t.Errorf("key %q outside the link prefix", k)
				}
				return true
			})
		})
	}
}

func TestOwnedBy(t *testing.T) {
	mem := state.NewMem()
	apply := func(at int64, cmd []byte) {
		t.Helper()
		if _, err := (StateMachine{}).Apply(mem, state.Meta{TimeMs: at}, cmd); err != nil {
			t.Fatal(err)
		}
	}
	apply(1000, create("old", "Alice"))
	apply(3000, create("new", "alice"))
	apply(2000, create("mid", "ALICE"))
	apply(4000, create("other", "alicex")) // a longer name must not match
	apply(5000, create("ab", "ab"))
	apply(6000, create("gone", "alice"))
	apply(7000, del("gone", "alice", false))
	got, err := OwnedBy(mem, "aLiCe", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, l := range got {
		codes = append(codes, l.Code)
	}
	if want := []string{"new", "mid", "old"}; !slices.Equal(codes, want) {
		t.Fatalf("OwnedBy = %v, want %v (newest first)", codes, want)
	}
	if got, _ := OwnedBy(mem, "alice", 2, nil); len(got) != 2 || got[0].Code != "new" {
		t.Fatalf("OwnedBy limit 2 = %+v", got)
	}
	if got, _ := OwnedBy(mem, "a", 0, nil); len(got) != 0 {
		t.Fatalf("OwnedBy(a) = %+v, want none", got)
	}
}
