package kv

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/parley-chat/parley/internal/state"
)

func TestGet(t *testing.T) {
	mem := mustMem(t, "a", "b/1")
	t.Run("found", func(t *testing.T) {
		it, found, err := Get(mem, "b/1")
		if err != nil || !found || string(it.Value) != "value of b/1" || it.Version != 1 {
			t.Fatalf("Get = (%+v, %v, %v)", it, found, err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		if _, found, err := Get(mem, "b"); err != nil || found {
			t.Fatalf("Get(b) found=%v err=%v, want missing", found, err)
		}
	})
	t.Run("ignores other prefixes", func(t *testing.T) {
		if err := mem.Set([]byte("x/a"), []byte("not kv")); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := Get(mem, "x/a"); found {
			t.Fatal("Get saw a key outside the kv prefix")
		}
	})
}

func TestList(t *testing.T) {
	mem := mustMem(t, "a", "a/1", "a/2", "a/3", "ab", "b", "b/1", "\xff", "\xff\xff")
	// Keys outside the kv prefix are never listed.
	for _, k := range []string{"j/zzz", "l/a"} {
		if err := mem.Set([]byte(k), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name          string
		prefix, after string
		limit         int
		want          []string
	}{
		{"all", "", "", 0, []string{"a", "a/1", "a/2", "a/3", "ab", "b", "b/1", "\xff", "\xff\xff"}},
		{"limit", "", "", 3, []string{"a", "a/1", "a/2"}},
		{"prefix", "a/", "", 0, []string{"a/1", "a/2", "a/3"}},
		{"prefix a", "a", "", 0, []string{"a", "a/1", "a/2", "a/3", "ab"}},
		{"after", "", "a/3", 2, []string{"ab", "b"}},
		{"after inside prefix", "a/", "a/1", 0, []string{"a/2", "a/3"}},
		{"after missing key", "a/", "a/15", 0, []string{"a/2", "a/3"}},
		{"after before prefix", "b", "a", 0, []string{"b", "b/1"}},
		{"after past prefix", "a/", "b", 0, nil},
		{"prefix 0xff", "\xff", "", 0, []string{"\xff", "\xff\xff"}},
		{"no match", "c", "", 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items, err := List(mem, tc.prefix, tc.after, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.Key)
				if it.Version != 1 || it.Size != len("value of "+it.Key) {
					t.Fatalf("item %+v: wrong version or size", it)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("List(%q, %q, %d) = %q, want %q", tc.prefix, tc.after, tc.limit, got, tc.want)
			}
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	cases := []struct{ in, want []byte }{
		{[]byte("k/"), []byte("k0")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("\xff\xff"), nil},
		{nil, nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			if got := state.PrefixEnd(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("state.PrefixEnd(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// mustMem returns a state holding each key with the value "value of KEY".
func mustMem(t *testing.T, keys ...string) *state.Mem {
	t.Helper()
	mem := state.NewMem()
	for _, k := range keys {
		mustApply(t, mem, 1, put(k, "value of "+k))
	}
	return mem
}
