package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/parley-chat/parley/internal/audit"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/partition"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/search"
	"github.com/parley-chat/parley/internal/transport"
)

// The node's own internal call methods; the request path's are partition's
// (partition.MethodPropose...). callTable routes every one of them.
const (
	methodJoin     = "join"     // joinRequest -> joinReply (join.go)
	methodStatus   = "status"   // nothing -> []multiraft.GroupStatus (status.go)
	methodEvents   = "events"   // nothing -> the node's event ring (events.go)
	methodTransfer = "transfer" // transferRequest -> nothing (controller.go)
	methodChecksum = "checksum" // checksumRequest -> checksumReply (verify.go)
	methodLag      = "lag"      // nothing -> the node's replica lag (lag.go)
	methodStats    = "stats"    // nothing -> api.NodeStats (stats.go)
	methodAudit    = "audit"    // audit.Filter -> []audit.Event (audit.go)
	methodLimit    = "limit"    // limitRequest -> limitReply (limits.go)
	methodBoot     = "boot"     // nothing -> nothing: a start announced (boot.go)
)

// callHandler answers one internal call method. from is the caller's node id
// as its certificate proves it ("" for a candidate, which reaches only
// join). The reply travels to the caller whatever it holds; an error means
// the request itself was malformed and reaches the caller as a remote error.
type callHandler func(ctx context.Context, from string, body []byte) (partition.Reply, error)

// callTable is every internal call method a node answers, with its handler:
// the one place they are declared.
func (n *Node) callTable() map[string]callHandler {
	return map[string]callHandler{
		// The request path: forwarded proposals and remote reads
		// (internal/partition), with the metadata group's guards.
		partition.MethodPropose:    n.callPropose(partition.MethodPropose, decodeJSON[partition.ProposeRequest]),
		partition.MethodProposeBin: n.callPropose(partition.MethodProposeBin, partition.DecodeProposeRequest),
		partition.MethodGet:        n.callRead(partition.MethodGet, partition.MethodGet, decodeJSON[partition.ReadRequest]),
		partition.MethodScan:       n.callRead(partition.MethodScan, partition.MethodScan, decodeJSON[partition.ReadRequest]),
		partition.MethodGetBin:     n.callRead(partition.MethodGet, partition.MethodGetBin, partition.DecodeReadRequest),
		partition.MethodScanBin:    n.callRead(partition.MethodScan, partition.MethodScanBin, partition.DecodeReadRequest),
		partition.MethodRelease:    n.callRelease,
		partition.MethodTail:       n.callTail,
		methodTyping:               n.callTyping,
		search.Method:              n.callSearch, // chat search, one partition's part (search.go)
		// Identity: the one method a candidate may call (join.go).
		methodJoin: n.callJoinRequest,
		// Self-healing.
		methodStatus:   n.callStatus,
		methodEvents:   n.callEvents,
		methodTransfer: n.callTransfer,
		methodBoot:     n.callBoot,
		// Operator endpoints.
		methodChecksum: n.callOps(methodChecksum),
		methodLag:      n.callOps(methodLag),
		methodStats:    n.callOps(methodStats),
		methodAudit:    n.callAudit,
		methodLimit:    n.callLimit,
	}
}

// The node answers its internal traffic itself: it is the transport's
// Handler.
var _ transport.Handler = (*Node)(nil)

// HandleRaft implements transport.Handler.
func (n *Node) HandleRaft(from string, msgs []transport.GroupMessage) {
	n.heard.note(from, time.Now())
	if e := n.live.Load(); e != nil {
		e.Step(msgs)
	}
}

// HandleSnapshot implements transport.Handler.
func (n *Node) HandleSnapshot(ctx context.Context, _ string, msg transport.GroupMessage, data io.Reader) error {
	e := n.live.Load()
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
func (n *Node) HandleCall(ctx context.Context, from string, method string, body []byte) ([]byte, error) {
	if from == "" && method != methodJoin {
		n.refuseCall(from, method, "a caller without a cluster certificate may only ask to join")
		return nil, fmt.Errorf("refused: %s needs a member's certificate", method)
	}
	call, ok := n.calls[method]
	if !ok {
		return nil, fmt.Errorf("unknown method %q", method)
	}
	if n.live.Load() == nil {
		return partition.EncodeReply(method, partition.Reply{Code: errs.Unavailable, Message: "node starting"})
	}
	rep, err := call(ctx, from, body)
	if err != nil {
		return nil, err
	}
	return partition.EncodeReply(method, rep)
}

// callPropose answers a forwarded proposal of method whose body decode
// reads (the JSON or the binary propose call), except the metadata
// commands another node may not propose (metaProposalRefusal).
func (n *Node) callPropose(method string, decode func([]byte) (partition.ProposeRequest, error)) callHandler {
	return func(ctx context.Context, from string, body []byte) (partition.Reply, error) {
		req, err := decode(body)
		if err != nil {
			return partition.Reply{}, fmt.Errorf("bad propose request: %w", err)
		}
		if why := metaProposalRefusal(from, req); why != "" {
			n.refuseCall(from, method, why)
			return partition.Reply{Code: errs.Forbidden, Message: why}, nil
		}
		return n.server.Propose(ctx, req), nil
	}
}

// decodeJSON reads the body of a JSON call (propose, get, scan) as a T.
func decodeJSON[T any](body []byte) (T, error) {
	var req T
	err := json.Unmarshal(body, &req)
	return req, err
}

// callRead answers a get or scan call (kind: partition.MethodGet or
// MethodScan) of a remote read, that came as method with a body decode
// reads, except reads of the metadata group's secrets: each node reads them
// from its own replica only.
func (n *Node) callRead(kind, method string, decode func([]byte) (partition.ReadRequest, error)) callHandler {
	return func(ctx context.Context, from string, body []byte) (partition.Reply, error) {
		req, err := decode(body)
		if err != nil {
			return partition.Reply{}, fmt.Errorf("bad read request: %w", err)
		}
		if req.Group == placement.MetaGroup && (kind == partition.MethodGet && placement.IsSecretKey(req.Key) ||
			kind == partition.MethodScan && placement.TouchesSecrets(req.Key, req.Hi)) {
			why := "the cluster's secrets are read by each node from its own replica only"
			n.refuseCall(from, method, why)
			return partition.Reply{Code: errs.Forbidden, Message: why}, nil
		}
		return n.server.Read(ctx, kind, req), nil
	}
}

// callRelease ends a remote read's session.
func (n *Node) callRelease(_ context.Context, _ string, body []byte) (partition.Reply, error) {
	var req partition.ReleaseRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return partition.Reply{}, fmt.Errorf("bad release request: %w", err)
	}
	return n.server.Release(req), nil
}

// callTail answers an upstream room feed.
func (n *Node) callTail(ctx context.Context, _ string, body []byte) (partition.Reply, error) {
	var req partition.TailRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return partition.Reply{}, fmt.Errorf("bad tail request: %w", err)
	}
	return n.feeds.Tail(ctx, req), nil
}

// metaProposalRefusal says why another node may not propose a metadata
// command ("" when it may): the cluster is created only by its first node,
// and a node changes only its own addresses.
func metaProposalRefusal(from string, req partition.ProposeRequest) string {
	if req.Group != placement.MetaGroup {
		return ""
	}
	c, err := placement.DecodeCommand(req.Cmd)
	if err != nil {
		return "" // the state machine refuses it
	}
	switch c := c.(type) {
	case placement.CreateCluster:
		return "a cluster is created by its first node only"
	case placement.UpdateNode:
		if c.Node.ID != from {
			return "a node may change only its own addresses"
		}
	}
	return ""
}

// refuseCall audits an internal call refused to its caller.
func (n *Node) refuseCall(from, method, why string) {
	n.audit.Record(audit.Event{Kind: audit.KindCallRefused, Outcome: audit.Refused, Actor: from, Target: method, Detail: why})
}

// call sends an internal request and decodes the reply.
func (n *Node) call(ctx context.Context, addr, method string, body []byte, rep *partition.Reply) error {
	return partition.Call(ctx, n.tr, addr, method, body, rep)
}
