package account_test

import (
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/account"
)

func TestScopes_Allows(t *testing.T) {
	must := func(list ...string) account.Scopes {
		ss, err := account.ParseScopes(list)
		if err != nil {
			t.Fatalf("ParseScopes(%q): %v", list, err)
		}
		return ss
	}
	type need struct {
		level      account.Level
		kind, name string
	}
	cases := []struct {
		name   string
		scopes account.Scopes
		allow  []need
		refuse []need
	}{
		{"session", nil, []need{{account.LevelAdmin, "", ""}}, nil},
		{"read", must("read"),
			[]need{{account.LevelRead, "", ""}, {account.LevelRead, account.KindRoom, "a"}},
			[]need{{account.LevelWrite, "", ""}, {account.LevelWrite, account.KindQueue, "q"}, {account.LevelAdmin, "", ""}}},
		{"write", must("write"),
			[]need{{account.LevelRead, "", ""}, {account.LevelWrite, account.KindRoom, "a"}},
			[]need{{account.LevelAdmin, "", ""}}},
		{"admin", must("admin"), []need{{account.LevelAdmin, "", ""}, {account.LevelWrite, account.KindQueue, "q"}}, nil},
		{"narrowed", must("write:room/General", "read:queue/jobs"),
			[]need{{account.LevelWrite, account.KindRoom, "general"}, {account.LevelRead, account.KindRoom, "GENERAL"}, {account.LevelRead, account.KindQueue, "jobs"}},
			[]need{{account.LevelRead, "", ""}, {account.LevelWrite, account.KindQueue, "jobs"}, {account.LevelRead, account.KindRoom, "other"},
				{account.LevelRead, account.KindQueue, "general"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range tc.allow {
				if !tc.scopes.Allows(n.level, n.kind, n.name) {
					t.Errorf("%v refuses %v on %s/%s", tc.scopes.Strings(), n.level, n.kind, n.name)
				}
			}
			for _, n := range tc.refuse {
				if tc.scopes.Allows(n.level, n.kind, n.name) {
					t.Errorf("%v allows %v on %s/%s", tc.scopes.Strings(), n.level, n.kind, n.name)
				}
			}
		})
	}
}

func TestParseScopes(t *testing.T) {
	ss, err := account.ParseScopes([]string{"write:room/B", "read", "write:room/b", "read:queue/q"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ss.Strings(), ","); got != "read,read:queue/q,write:room/b" {
		t.Fatalf("ParseScopes = %s, want canonical order without duplicates", got)
	}
	for _, bad := range [][]string{nil, {""}, {"Read"}, {"read:"}, {"read:room"}, {"read:room/"}, {"read:user/x"}, {"admin:queue/q"}, {"read:room/" + strings.Repeat("x", 65)}} {
		if _, err := account.ParseScopes(bad); err == nil {
			t.Errorf("ParseScopes(%q) accepted", bad)
		}
	}
	many := make([]string, account.MaxScopes+1)
	for i := range many {
		many[i] = "read:room/r" + strings.Repeat("x", i)
	}
	if _, err := account.ParseScopes(many); err == nil {
		t.Errorf("ParseScopes accepted %d scopes", len(many))
	}
}
