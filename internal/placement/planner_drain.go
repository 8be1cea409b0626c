package placement

import (
	"errors"
	"fmt"
	"strings"
)

// ErrDrainImpossible is matched (errors.Is) by every DrainError.
var ErrDrainImpossible = errors.New("drain impossible")

// DrainError says that a draining node holds replicas that have nowhere to
// go: every eligible node already holds a replica of those groups.
type DrainError struct {
	Node   string
	Groups []uint64
}

func (e *DrainError) Error() string {
	gs := make([]string, len(e.Groups))
	for i, g := range e.Groups {
		gs[i] = fmt.Sprint(g)
	}
	return fmt.Sprintf("cannot drain node %s: no other eligible node can take its replica of group %s (add a node first)",
		e.Node, strings.Join(gs, ", "))
}

// Is makes errors.Is(err, ErrDrainImpossible) hold.
func (e *DrainError) Is(target error) bool { return target == ErrDrainImpossible }

// CheckDrain reports whether draining node can complete with the nodes the
// map has now, so the CLI can refuse an impossible drain upfront: every group
// with a replica on it needs another eligible node without one.
func CheckDrain(m *Map, node string) error {
	nd, ok := m.Node(node)
	if !ok {
		return fmt.Errorf("no such node %q", node)
	}
	if nd.State == NodeDraining {
		return nil
	}
	view := View{Map: m.Clone()}
	d, _ := view.Map.Node(node)
	d.State = NodeDraining
	p := newPlanner(view)
	var groups []uint64
	for _, st := range p.states {
		if st.holds(node) && p.stranded(st.g, node) {
			groups = append(groups, st.g.ID)
		}
	}
	if len(groups) > 0 {
		return &DrainError{Node: node, Groups: groups}
	}
	return nil
}

// replica (for the metadata group, whose voter target shrinks with the pool,
// only when the pool is empty).
func (p *planner) stranded(g *Group, node string) bool {
	if g.ID == MetaGroup {
		r, _ := p.m.ReplicaOn(g.ID, node)
		return r.Role == RoleVoter && len(p.meta.nodes) == 0
	}
	if len(p.part.nodes) >= max(1, p.m.ReplicationFactor) {
		return false
	}
	for _, n := range p.part.nodes {
		if _, ok := p.m.ReplicaOn(g.ID, n); !ok {
			return false
		}
	}
	return true
}

func (p *planner) checkDrain(st *groupState) {
	for _, r := range st.g.Replicas {
		if p.node(r.Node).draining && p.stranded(st.g, r.Node) {
			p.drain[r.Node] = append(p.drain[r.Node], st.g.ID)
		}
	}
}

func (p *planner) drainErr() error {
	var errs []error
	for _, n := range p.m.Nodes {
		if gs := p.drain[n.ID]; len(gs) > 0 {
			errs = append(errs, &DrainError{Node: n.ID, Groups: gs})
		}
	}
	return errors.Join(errs...)
}
