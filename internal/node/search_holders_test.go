package node

import (
	"slices"
	"testing"
)

// The search holders of a partition are the first k of its replicas, in its
// search order, that may keep an index: a node that keeps none or that
// gossip reports dead is passed over, and fewer come back when too few may.
func TestSearchHolders(t *testing.T) {
	replicas := []string{"n1", "n2", "n3"}
	const g = 7
	o := searchOrder(g, replicas)
	all := func(string) bool { return true }
	not := func(ids ...string) func(string) bool {
		return func(id string) bool { return !slices.Contains(ids, id) }
	}
	for _, tc := range []struct {
		name     string
		k        int
		eligible func(string) bool
		want     []string
	}{
		{"the first", 1, all, o[:1]},
		{"the first two", 2, all, o[:2]},
		{"more than there are", 5, all, o},
		{"the first passed over", 1, not(o[0]), o[1:2]},
		{"two passed over", 2, not(o[0], o[1]), o[2:]},
		{"none may", 1, not(replicas...), nil},
	} {
		if got := searchHolders(o, tc.k, tc.eligible); !slices.Equal(got, tc.want) {
			t.Errorf("%s: searchHolders(%v, %d) = %v, want %v", tc.name, o, tc.k, got, tc.want)
		}
	}
}

// The search order spreads the first holders of many partitions over the
// nodes, is the same whatever order the map lists replicas in, and keeps the
// order of the other nodes when one leaves.
func TestSearchOrder(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	first := map[string]int{}
	for g := uint64(1); g <= 96; g++ {
		o := searchOrder(g, nodes)
		first[o[0]]++
		if r := searchOrder(g, []string{"n3", "n1", "n2"}); !slices.Equal(r, o) {
			t.Fatalf("partition %d: order %v from one listing, %v from another", g, o, r)
		}
		for _, gone := range nodes {
			rest := slices.DeleteFunc(slices.Clone(o), func(id string) bool { return id == gone })
			if got := searchOrder(g, slices.DeleteFunc(slices.Clone(nodes), func(id string) bool { return id == gone })); !slices.Equal(got, rest) {
				t.Fatalf("partition %d without %s: order %v, want %v", g, gone, got, rest)
			}
		}
	}
	for _, id := range nodes {
		if first[id] < 20 {
			t.Errorf("node %s is first for %d of 96 partitions, want about a third: %v", id, first[id], first)
		}
	}
}
