package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/transport"
)

// Internal call methods.
const (
	methodPropose = "propose"
	methodGet     = "get"
	methodScan    = "scan"
	methodJoin    = "join"
	methodStatus  = "status"
)

// handler answers the node's internal traffic.
type handler struct{ n *Node }

var _ transport.Handler = (*handler)(nil)

// HandleRaft implements transport.Handler.
func (h *handler) HandleRaft(from string, msgs []transport.GroupMessage) {
	h.n.heard.note(from, time.Now())
	if e := h.n.live.Load(); e != nil {
		e.Step(msgs)
	}
}

// HandleSnapshot implements transport.Handler.
func (h *handler) HandleSnapshot(ctx context.Context, _ string, msg transport.GroupMessage, data io.Reader) error {
	e := h.n.live.Load()
	if e == nil {
		return fmt.Errorf("node starting")
	}
	return e.HandleSnapshot(ctx, msg, data)
}

// HandleCall implements transport.Handler. Errors meant for the caller travel
// inside the reply; a returned error means the request itself was bad.
//
// from is the caller's node id as its certificate proves it, or "" for a
// caller without one (a joining candidate): such a caller may only join.
func (h *handler) HandleCall(ctx context.Context, from string, method string, body []byte) ([]byte, error) {
	n := h.n
	if from == "" && method != methodJoin {
		n.refuseCall(from, method, "a caller without a cluster certificate may only ask to join")
		return nil, fmt.Errorf("refused: %s needs a member's certificate", method)
	}
	if n.live.Load() == nil {
		return json.Marshal(callReply{Code: errs.Unavailable, Message: "node starting"})
	}
	switch method {
	case methodPropose:
		var req proposeRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("bad propose request: %w", err)
		}
		if why := metaProposalRefusal(from, req); why != "" {
			n.refuseCall(from, method, why)
			return json.Marshal(callReply{Code: errs.Forbidden, Message: why})
		}
		return json.Marshal(replyOf(n.engine.Propose(ctx, req.Group, req.ID, req.Cmd)))
	case methodGet, methodScan:
		var req readRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("bad read request: %w", err)
		}
		if req.Group == placement.MetaGroup && (method == methodGet && placement.IsSecretKey(req.Key) ||
			method == methodScan && placement.TouchesSecrets(req.Key, req.Hi)) {
			why := "the cluster's secrets are read by each node from its own replica only"
			n.refuseCall(from, method, why)
			return json.Marshal(callReply{Code: errs.Forbidden, Message: why})
		}
		return json.Marshal(n.localRead(ctx, method, req))
	case methodJoin:
		return json.Marshal(n.handleJoin(ctx, from, body))
	case methodTail:
		return n.handleTail(ctx, body)
	case methodStatus:
		st, err := n.localStatus(ctx)
		if err != nil {
			return json.Marshal(replyOf(nil, err))
		}
		b, _ := json.Marshal(st)
		return json.Marshal(callReply{Result: b})
	}
	if b, ok, err := n.opsCall(ctx, method, body); ok {
		return b, err
	}
	if b, ok, err := n.healCall(ctx, method, body); ok {
		return b, err
	}
	if b, ok, err := n.auditCall(ctx, method, body); ok {
		return b, err
	}
	return nil, fmt.Errorf("unknown method %q", method)
}

// metaProposalRefusal says why another node may not propose a metadata
// command ("" when it may): the cluster is created only by its first node,
// and a node changes only its own addresses.
func metaProposalRefusal(from string, req proposeRequest) string {
	if req.Group != placement.MetaGroup {
		return ""
	}
	var c placement.Command
	if len(req.Cmd) == 0 || req.Cmd[0] != placement.Tag || json.Unmarshal(req.Cmd[1:], &c) != nil {
		return ""
	}
	switch {
	case c.Op == placement.OpCreate:
		return "a cluster is created by its first node only"
	case c.Op == placement.OpUpdateNode && (c.Node == nil || c.Node.ID != from):
		return "a node may change only its own addresses"
	}
	return ""
}

// refuseCall audits an internal call refused to its caller.
func (n *Node) refuseCall(from, method, why string) {
	n.audit.Record(audit.Event{Kind: audit.KindCallRefused, Outcome: audit.Refused, Actor: from, Target: method, Detail: why})
}

// localRead serves a forwarded read from this node's replica.
func (n *Node) localRead(ctx context.Context, method string, req readRequest) callReply {
	var reply callReply
	stale, _, err := n.readLocal(ctx, req.Group, req.Linearizable, func(r state.Reader) error {
		reply = readReply(r, method, req)
		return nil
	})
	switch {
	case err != nil:
		return replyOf(nil, err)
	}
	reply.StaleMs = stale
	return reply
}

// readReply answers a get or scan from a replica's state.
func readReply(r state.Reader, method string, req readRequest) callReply {
	if method == methodGet {
		v, ok, err := r.Get(req.Key)
		if err != nil {
			return replyOf(nil, err)
		}
		if !ok {
			return callReply{}
		}
		return callReply{Result: append([]byte{1}, v...)}
	}
	limit := min(max(req.Limit, 1), scanPage)
	var pairs [][2][]byte
	err := r.Scan(req.Key, req.Hi, func(k, v []byte) bool {
		pairs = append(pairs, [2][]byte{append([]byte(nil), k...), append([]byte(nil), v...)})
		return len(pairs) < limit
	})
	if err != nil {
		return replyOf(nil, err)
	}
	return callReply{Result: encodePairs(pairs)}
}

// call sends an internal request and decodes the reply.
func (n *Node) call(ctx context.Context, addr, method string, body []byte, rep *callReply) error {
	b, err := n.tr.Call(ctx, addr, method, body)
	if err != nil {
		if ctx.Err() != nil {
			return errs.Wrap(errs.Timeout, err, "node %s did not answer in time", addr)
		}
		return fmt.Errorf("call %s on %s: %w", method, addr, err)
	}
	if err := json.Unmarshal(b, rep); err != nil {
		return fmt.Errorf("bad reply to %s from %s: %w", method, addr, err)
	}
	return nil
}
