package node

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/transport"
)

// Router is the request path of the product layer: it proposes commands and
// reads state of any partition from any node, forwarding to the leader or a
// replica over the internal transport and retrying across leader changes.
type Router struct {
	n *Node
}

// defaultRequestTimeout bounds a call whose context has no deadline.
const defaultRequestTimeout = 5 * time.Second

// PartitionOf returns the partition that owns a routing key.
func (r *Router) PartitionOf(routingKey string) uint64 {
	return placement.PartitionOf(routingKey, r.n.partitions())
}

// Partitions returns all partition ids, 1..P.
func (r *Router) Partitions() []uint64 {
	p := r.n.partitions()
	ids := make([]uint64, p)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	return ids
}

// Propose replicates cmd in partition p and returns Apply's result. A
// non-empty dedupKey makes it idempotent across retries from any node.
func (r *Router) Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error) {
	id := multiraft.NewProposalID()
	if dedupKey != "" {
		id = multiraft.ClientProposalID(dedupKey)
	}
	return r.propose(ctx, p, id, cmd)
}

// propose retries one proposal id until it is applied or ctx ends.
func (r *Router) propose(ctx context.Context, p uint64, id, cmd []byte) ([]byte, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var lastErr error
	for attempt := 0; ; attempt++ {
		target := r.leaderAddr(p, attempt)
		var res []byte
		var err error
		switch {
		case target == "":
			err = errs.New(errs.Unavailable, "no leader known for partition %d", p)
		case target == r.n.self():
			res, err = r.n.engine.Propose(ctx, p, id, cmd)
		default:
			res, err = r.remotePropose(ctx, target, p, id, cmd)
		}
		if err == nil {
			return res, nil
		}
		lastErr = err
		var nl *multiraft.NotLeaderError
		if errors.As(err, &nl) {
			r.n.hintLeader(p, nl.Leader)
		} else if !retryable(err) {
			return nil, err
		}
		if !sleepBackoff(ctx, attempt) {
			if errs.Is(lastErr, errs.Timeout) {
				return nil, lastErr
			}
			return nil, errs.Wrap(errs.Unavailable, lastErr, "partition %d has no reachable leader", p)
		}
	}
}

// retryable reports whether a failed attempt may be tried again elsewhere.
func retryable(err error) bool {
	var nl *multiraft.NotLeaderError
	switch {
	case errors.As(err, &nl), multiraft.IsNoReplica(err), errors.Is(err, transport.ErrUnreachable), errors.Is(err, multiraft.ErrClosed):
		// NoReplica: the node asked holds no replica (the map moved on).
		// A user's NotFound is an answer, never a reason to ask elsewhere.
		return true
	}
	switch errs.CodeOf(err) {
	case errs.Unavailable, errs.Timeout:
		return true
	}
	return false
}

// sleepBackoff waits before retry attempt+1; false when ctx ended.
func sleepBackoff(ctx context.Context, attempt int) bool {
	d := time.Duration(min(attempt, 6)+1) * 10 * time.Millisecond
	d += time.Duration(rand.Int64N(int64(10 * time.Millisecond)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, defaultRequestTimeout)
}

// leaderAddr picks the node to send partition p's proposals to: the local
// replica's view of the leader, then the last hint, then the replicas in turn.
func (r *Router) leaderAddr(p uint64, attempt int) string {
	if lead, local := r.n.engine.Leader(p); local {
		return r.n.self()
	} else if lead != 0 && attempt%4 != 3 {
		if addr, ok := r.n.dir.AddrOf(lead); ok {
			return addr
		}
	}
	if lead := r.n.leaderHint(p); lead != 0 && attempt%4 != 3 {
		if addr, ok := r.n.dir.AddrOf(lead); ok {
			return addr
		}
	}
	addrs := r.n.replicaAddrs(p)
	if len(addrs) == 0 {
		return ""
	}
	return addrs[attempt%len(addrs)]
}

// proposeRequest is the body of the "propose" call.
type proposeRequest struct {
	Group uint64 `json:"g"`
	ID    []byte `json:"id"`
	Cmd   []byte `json:"cmd"`
}

// callReply carries a result or a typed error back from another node. Code
// is a user-facing errs.Code; Engine a condition of the replication engine
// (engineNoReplica), which the caller acts on and never shows.
type callReply struct {
	Result    []byte    `json:"r,omitempty"`
	Code      errs.Code `json:"code,omitempty"`
	Message   string    `json:"msg,omitempty"`
	NotLeader bool      `json:"nl,omitempty"`
	Leader    uint64    `json:"lead,omitempty"`
	Engine    string    `json:"eng,omitempty"`
	StaleMs   int64     `json:"stale,omitempty"`
}

// engineNoReplica is the Engine code of multiraft.NoReplicaError.
const engineNoReplica = "no_replica"

func replyOf(res []byte, err error) callReply {
	if err == nil {
		return callReply{Result: res}
	}
	var nl *multiraft.NotLeaderError
	if errors.As(err, &nl) {
		return callReply{NotLeader: true, Leader: nl.Leader, Code: errs.Unavailable, Message: err.Error()}
	}
	if multiraft.IsNoReplica(err) {
		return callReply{Engine: engineNoReplica, Message: err.Error()}
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return callReply{Code: e.Code, Message: e.Message}
	}
	return callReply{Code: errs.Unavailable, Message: err.Error()}
}

func (c callReply) err(group uint64) error {
	switch {
	case c.NotLeader:
		return &multiraft.NotLeaderError{Group: group, Leader: c.Leader}
	case c.Engine == engineNoReplica:
		return &multiraft.NoReplicaError{Group: group}
	case c.Engine != "":
		return errs.New(errs.Unavailable, "%s", c.Message)
	case c.Code != "":
		return errs.New(c.Code, "%s", c.Message)
	}
	return nil
}

func (r *Router) remotePropose(ctx context.Context, addr string, p uint64, id, cmd []byte) ([]byte, error) {
	body, _ := json.Marshal(proposeRequest{Group: p, ID: id, Cmd: cmd})
	var rep callReply
	if err := r.n.call(ctx, addr, methodPropose, body, &rep); err != nil {
		return nil, err
	}
	if err := rep.err(p); err != nil {
		return nil, err
	}
	return rep.Result, nil
}

// Read runs fn against partition p's state. Linearizable reads wait for a
// quorum-confirmed read index (on this node's replica, or on a replica node
// the reads are forwarded to); stale reads use the nearest replica and report
// how stale it may be.
func (r *Router) Read(ctx context.Context, p uint64, stale bool, fn func(state.Reader) error) (int64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var lastErr error
	for attempt := 0; ; attempt++ {
		ms, fnErr, err := r.n.readLocal(ctx, p, !stale, fn)
		switch {
		case err == nil:
			return ms, fnErr
		case !multiraft.IsNoReplica(err):
			// The local replica may be closing (the controller moved it
			// away): try again, here if it is still held, else remotely.
			lastErr = err
			if !retryable(err) {
				return 0, err
			}
		default:
			addr := r.leaderAddr(p, attempt)
			if addr == "" || addr == r.n.self() {
				lastErr = errs.New(errs.Unavailable, "no replica of partition %d reachable", p)
				break
			}
			rr := &remoteReader{ctx: ctx, n: r.n, addr: addr, group: p, linearizable: !stale}
			err := fn(rr)
			if err == nil || !rr.failed {
				return rr.staleMs, err
			}
			lastErr = err
			if !retryable(err) {
				return 0, err
			}
		}
		if !sleepBackoff(ctx, attempt) {
			if errs.Is(lastErr, errs.Timeout) {
				return 0, lastErr
			}
			return 0, errs.Wrap(errs.Unavailable, lastErr, "no replica of partition %d answered", p)
		}
	}
}

// readRequest is the body of the "get" and "scan" calls.
type readRequest struct {
	Group        uint64 `json:"g"`
	Linearizable bool   `json:"lin,omitempty"`
	Key          []byte `json:"k,omitempty"`
	Hi           []byte `json:"hi,omitempty"`
	Limit        int    `json:"n,omitempty"`
}

// scanPage is how many pairs one "scan" call returns at most.
const scanPage = 512

// remoteReader reads another node's replica through calls. The first call of
// a linearizable read waits for that replica's read index; later calls read
// its (newer or equal) state directly.
type remoteReader struct {
	ctx          context.Context
	n            *Node
	addr         string
	group        uint64
	linearizable bool
	failed       bool // a call failed (as opposed to fn's own error)
	staleMs      int64
}

var _ state.Reader = (*remoteReader)(nil)

func (rr *remoteReader) call(method string, req readRequest) ([]byte, error) {
	req.Group, req.Linearizable = rr.group, rr.linearizable
	body, _ := json.Marshal(req)
	var rep callReply
	if err := rr.n.call(rr.ctx, rr.addr, method, body, &rep); err != nil {
		rr.failed = true
		return nil, err
	}
	if err := rep.err(rr.group); err != nil {
		rr.failed = true
		return nil, err
	}
	rr.linearizable = false
	rr.staleMs = max(rr.staleMs, rep.StaleMs)
	return rep.Result, nil
}

// Get implements state.Reader.
func (rr *remoteReader) Get(key []byte) ([]byte, bool, error) {
	res, err := rr.call(methodGet, readRequest{Key: key})
	if err != nil {
		return nil, false, err
	}
	if len(res) == 0 {
		return nil, false, nil
	}
	return res[1:], true, nil
}

// Scan implements state.Reader, fetching pages of pairs.
func (rr *remoteReader) Scan(lo, hi []byte, fn func(k, v []byte) bool) error {
	for {
		res, err := rr.call(methodScan, readRequest{Key: lo, Hi: hi, Limit: scanPage})
		if err != nil {
			return err
		}
		pairs, err := decodePairs(res)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			if !fn(p[0], p[1]) {
				return nil
			}
		}
		if len(pairs) < scanPage {
			return nil
		}
		lo = append(append([]byte(nil), pairs[len(pairs)-1][0]...), 0)
	}
}

func encodePairs(pairs [][2][]byte) []byte {
	var b []byte
	for _, p := range pairs {
		b = binary.AppendUvarint(b, uint64(len(p[0])))
		b = append(b, p[0]...)
		b = binary.AppendUvarint(b, uint64(len(p[1])))
		b = append(b, p[1]...)
	}
	return b
}

func decodePairs(b []byte) ([][2][]byte, error) {
	var out [][2][]byte
	for len(b) > 0 {
		var p [2][]byte
		for i := range p {
			n, k := binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				return nil, fmt.Errorf("node: malformed scan page")
			}
			p[i] = b[k : k+int(n)]
			b = b[k+int(n):]
		}
		out = append(out, p)
	}
	return out, nil
}
