package placement

import "fmt"

// Holding returns how many replicas a node still has to hand over before it
// is drained: HeldBy(node).Total().
func (m *Map) Holding(node string) int { return m.HeldBy(node).Total() }

// HeldBy returns what a node still has to hand over before it is drained:
// its partition replicas and its metadata voter (a metadata learner only
// follows the map).
func (m *Map) HeldBy(node string) Held {
	var h Held
	for _, g := range m.Groups {
		for _, r := range g.Replicas {
			switch {
			case r.Node != node:
			case g.ID != MetaGroup:
				h.Partitions++
			case r.Role == RoleVoter:
				h.MetaVoter = true
			}
		}
	}
	return h
}

// Held is what a node holds that a drain must move: partition replicas,
// and a voter of the metadata group, which is no partition. Messages name
// the two apart, so that a count never disagrees with the number of
// partitions the cluster reports.
type Held struct {
	Partitions int  // partition replicas
	MetaVoter  bool // a voter of the metadata group
}

// Total is the number of replicas held, the metadata voter included.
func (h Held) Total() int {
	if h.MetaVoter {
		return h.Partitions + 1
	}
	return h.Partitions
}

// String describes h for messages: "16 partition replicas and a metadata
// voter", "1 partition replica", "a metadata voter", "no replica".
func (h Held) String() string {
	var parts string
	switch h.Partitions {
	case 0:
	case 1:
		parts = "1 partition replica"
	default:
		parts = fmt.Sprintf("%d partition replicas", h.Partitions)
	}
	switch {
	case parts != "" && h.MetaVoter:
		return parts + " and a metadata voter"
	case h.MetaVoter:
		return "a metadata voter"
	case parts != "":
		return parts
	}
	return "no replica"
}
