package node

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/parley-chat/parley/internal/partition"
	"slices"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/storage"
)

// methodAudit asks a node for its audit events; the body is an
// audit.Filter, the result a JSON array of audit.Event.

// auditBudget bounds the wait for one other node's audit events.
const auditBudget = 2 * time.Second

var _ api.AuditSource = (*Node)(nil)

// Audit returns the node's audit log, the audit.Recorder every layer
// reports security events to. It exists from New on, before the node
// starts: events recorded before its store opens wait in its queue and are
// saved once it does (startAudit).
func (n *Node) Audit() *audit.Log { return n.audit }

// startAudit attaches the node's store to its audit log and starts the
// writer that saves events there until the node closes. Without a store
// (it cannot be opened) the log keeps its ring only.
func (n *Node) startAudit() {
	l := n.Audit()
	s, err := n.db.OpenNodeLog(storage.NodeLogAudit, audit.Keep)
	if err != nil {
		n.log.Warn("audit events kept in memory only", "err", err)
		return
	}
	l.Attach(s)
	n.goBackground(func() { l.Run(n.ctx) })
}

// AuditEvents implements api.AuditSource: this node's events and those of
// every other node of the map, asked in parallel over the internal
// transport, merged oldest first, the newest f.Limit kept. A node that
// does not answer within auditBudget is listed as unreachable.
func (n *Node) AuditEvents(ctx context.Context, f audit.Filter) (*api.AuditReport, error) {
	f = f.Normalized()
	out, err := n.Audit().Query(f)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	rep := &api.AuditReport{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	if m := n.Map(); m != nil {
		for _, nd := range m.Nodes {
			if nd.ID == n.cfg.ID {
				continue
			}
			wg.Go(func() {
				theirs, err := n.remoteAudit(ctx, nd.Addr, body)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					rep.Unreachable = append(rep.Unreachable, nd.ID)
					return
				}
				out = append(out, theirs...)
			})
		}
	}
	wg.Wait()
	slices.Sort(rep.Unreachable)
	rep.Events = audit.Merge(out, f.Limit)
	return rep, nil
}

// remoteAudit asks the node at addr for its audit events.
func (n *Node) remoteAudit(ctx context.Context, addr string, body []byte) ([]audit.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, auditBudget)
	defer cancel()
	var rep partition.Reply
	if err := n.call(ctx, addr, methodAudit, body, &rep); err != nil {
		return nil, err
	}
	if err := rep.Err(0); err != nil {
		return nil, err
	}
	var evs []audit.Event
	if err := json.Unmarshal(rep.Result, &evs); err != nil {
		return nil, fmt.Errorf("bad audit reply from %s: %w", addr, err)
	}
	return evs, nil
}

// callAudit answers an audit call: this node's events that pass the
// filter.
func (n *Node) callAudit(_ context.Context, _ string, body []byte) (partition.Reply, error) {
	var f audit.Filter
	if err := json.Unmarshal(body, &f); err != nil {
		return partition.Reply{}, fmt.Errorf("bad audit request: %w", err)
	}
	evs, err := n.Audit().Query(f)
	if err != nil {
		return partition.ReplyOf(nil, err), nil
	}
	res, err := json.Marshal(evs)
	return partition.Reply{Result: res}, err
}
