package placement

import "testing"

func TestMap_HeldBy(t *testing.T) {
	voter := func(node string) Replica { return Replica{Node: node, Role: RoleVoter} }
	m := &Map{Groups: []Group{
		{ID: MetaGroup, Replicas: []Replica{voter("n1"), voter("n2"), {Node: "n3", Role: RoleLearner}}},
		{ID: 1, Replicas: []Replica{voter("n1"), voter("n2"), voter("n3")}},
		{ID: 2, Replicas: []Replica{voter("n1"), voter("n3"), {Node: "n4", Role: RoleLearner}}},
	}}
	for _, tc := range []struct {
		node  string
		want  Held
		total int
		text  string
	}{
		{"n1", Held{Partitions: 2, MetaVoter: true}, 3, "2 partition replicas and a metadata voter"},
		{"n2", Held{Partitions: 1, MetaVoter: true}, 2, "1 partition replica and a metadata voter"},
		{"n3", Held{Partitions: 2}, 2, "2 partition replicas"}, // a metadata learner is not held
		{"n4", Held{Partitions: 1}, 1, "1 partition replica"},
		{"n5", Held{}, 0, "no replica"},
	} {
		t.Run(tc.node, func(t *testing.T) {
			got := m.HeldBy(tc.node)
			if got != tc.want || got.Total() != tc.total || m.Holding(tc.node) != tc.total || got.String() != tc.text {
				t.Errorf("HeldBy = %+v (total %d, %q); want %+v (total %d, %q)", got, got.Total(), got, tc.want, tc.total, tc.text)
			}
		})
	}
}

func TestHeld_String(t *testing.T) {
	for _, tc := range []struct {
		h    Held
		want string
	}{
		{Held{Partitions: 16, MetaVoter: true}, "16 partition replicas and a metadata voter"},
		{Held{MetaVoter: true}, "a metadata voter"},
		{Held{Partitions: 1}, "1 partition replica"},
		{Held{}, "no replica"},
	} {
		if got := tc.h.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.h, got, tc.want)
		}
	}
}
