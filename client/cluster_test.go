package client_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/parley-chat/parley/client"
)

// TestClusterStatus_AliveAddrs checks a client's failover candidates are
// the nodes the map shows alive, and no other: the rogue address of an
// unreachable node listed in the map, a suspect, dead, left, draining or
// unknown node, or a node without a state is never one.
func TestClusterStatus_AliveAddrs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes string
		want  []string
	}{
		{"every node alive", `[{"id":"n1","addr":"10.0.0.1:7070","state":"alive"},{"id":"n2","addr":"10.0.0.2:7070","state":"alive"}]`,
			[]string{"10.0.0.1:7070", "10.0.0.2:7070"}},
		{"only alive ones", `[
			{"id":"n1","addr":"10.0.0.1:7070","state":"alive"},
			{"id":"rogue","addr":"10.6.6.6:7070","state":"unreachable"},
			{"id":"n3","addr":"10.0.0.3:7070","state":"suspect"},
			{"id":"n4","addr":"10.0.0.4:7070","state":"dead"},
			{"id":"n5","addr":"10.0.0.5:7070","state":"left"},
			{"id":"n6","addr":"10.0.0.6:7070","state":"draining"},
			{"id":"n7","addr":"10.0.0.7:7070","state":"unknown"},
			{"id":"n8","addr":"10.0.0.8:7070"},
			{"id":"n9","addr":"10.0.0.9:7070","state":"Alive"},
			{"id":"n10","addr":"10.0.0.10:7070","state":"alive"}]`,
			[]string{"10.0.0.1:7070", "10.0.0.10:7070"}},
		{"no address, or twice", `[{"id":"n1","state":"alive"},{"id":"n2","addr":"10.0.0.2:7070","state":"alive"},{"id":"n2b","addr":"10.0.0.2:7070","state":"alive"}]`,
			[]string{"10.0.0.2:7070"}},
		{"none alive", `[{"id":"n1","addr":"10.0.0.1:7070","state":"dead"}]`, nil},
		{"no nodes", `[]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st client.ClusterStatus
			if err := json.Unmarshal([]byte(`{"nodes":`+tc.nodes+`}`), &st); err != nil {
				t.Fatal(err)
			}
			if got := st.AliveAddrs(); !slices.Equal(got, tc.want) {
				t.Errorf("AliveAddrs() = %q, want %q", got, tc.want)
			}
		})
	}
}
