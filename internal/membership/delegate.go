package membership

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/memberlist"
)

// delegate receives memberlist's callbacks. They run on memberlist's
// goroutines, some with its locks held: none blocks or calls back into it.
type delegate struct{ m *Membership }

var (
	_ memberlist.Delegate      = (*delegate)(nil)
	_ memberlist.EventDelegate = (*delegate)(nil)
	_ memberlist.MergeDelegate = (*delegate)(nil)
	_ memberlist.AliveDelegate = (*delegate)(nil)
	_ memberlist.PingDelegate  = (*delegate)(nil)
)

// NodeMeta returns this node's encoded metadata.
func (d *delegate) NodeMeta(limit int) []byte {
	b, err := encodeMeta(*d.m.meta.Load())
	if err != nil || len(b) > limit {
		return nil // checked by New and UpdateMeta: cannot happen
	}
	return b
}

// NotifyMsg receives departure announcements (see Leave).
func (d *delegate) NotifyMsg(b []byte) {
	var msg leaveMsg
	if json.Unmarshal(b, &msg) == nil && msg.Cluster == d.m.cfg.ClusterID && msg.Node != "" {
		d.m.departed(msg.Node)
	}
}

// GetBroadcasts, LocalState and MergeRemoteState are unused: the metadata is
// all that is gossiped.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

// NotifyJoin records a member that appeared or came back.
func (d *delegate) NotifyJoin(n *memberlist.Node) {
	w, err := decodeMeta(n.Meta)
	if err != nil {
		return // refused by NotifyAlive already
	}
	d.m.set(n.Name, n.Address(), Alive, &w)
}

// NotifyLeave records a member that failed or left; a member that announced
// its departure (Leave) is Left, any other Dead.
func (d *delegate) NotifyLeave(n *memberlist.Node) {
	d.m.set(n.Name, n.Address(), Dead, nil)
}

// NotifyUpdate records new metadata.
func (d *delegate) NotifyUpdate(n *memberlist.Node) {
	w, err := decodeMeta(n.Meta)
	if err != nil {
		return
	}
	d.m.mu.Lock()
	state := Alive
	if mb, ok := d.m.members[n.Name]; ok && mb.State == Suspect {
		state = Suspect
	}
	d.m.mu.Unlock()
	d.m.set(n.Name, n.Address(), state, &w)
}

// NotifyMerge refuses to merge with a node that knows members of another
// cluster (a join or a push/pull across clusters).
func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	for _, p := range peers {
		if err := d.check(p); err != nil {
			return err
		}
	}
	return nil
}

// NotifyAlive ignores alive messages about members of another cluster, which
// could otherwise arrive by gossip.
func (d *delegate) NotifyAlive(p *memberlist.Node) error { return d.check(p) }

func (d *delegate) check(p *memberlist.Node) error {
	w, err := decodeMeta(p.Meta)
	if err != nil {
		return fmt.Errorf("node %s: %w", p.Name, err)
	}
	if w.Cluster != d.m.cfg.ClusterID {
		err := fmt.Errorf("node %s belongs to cluster %q, not %q", p.Name, w.Cluster, d.m.cfg.ClusterID)
		if d.m.cfg.OnRefused != nil {
			d.m.cfg.OnRefused(p.Address(), err.Error())
		}
		return err
	}
	return nil
}

// AckPayload adds nothing to probe acks.
func (d *delegate) AckPayload() []byte { return nil }

// NotifyPingComplete clears this node's suspicion of a member that answered
// its probe.
func (d *delegate) NotifyPingComplete(n *memberlist.Node, rtt time.Duration, payload []byte) {
	d.m.transition(n.Name, Suspect, Alive)
}
