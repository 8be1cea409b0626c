package partition

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/transport"
	"github.com/parley-chat/parley/internal/wire"
)

// Router is the request path of the product layer: it proposes commands and
// reads state of any partition (and of the metadata group) from any node,
// forwarding to the leader or a replica over the internal transport and
// retrying across leader changes. It is safe for concurrent use.
type Router struct {
	d Deps

	hintMu sync.Mutex
	hints  map[uint64]uint64 // group -> leader replica last heard of

	protocol protocolCache
}

// NewRouter returns the router of the node d describes.
func NewRouter(d Deps) *Router {
	return &Router{d: d, hints: map[uint64]uint64{}}
}

// DefaultRequestTimeout bounds a proposal or read whose context has no
// deadline.
const DefaultRequestTimeout = 5 * time.Second

// PartitionOf returns the partition that owns a routing key.
func (r *Router) PartitionOf(routingKey string) uint64 {
	return placement.PartitionOf(routingKey, r.d.Directory.Partitions())
}

// Partitions returns all partition ids, 1..P.
func (r *Router) Partitions() []uint64 {
	p := r.d.Directory.Partitions()
	ids := make([]uint64, p)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	return ids
}

// Propose replicates cmd in partition p and returns Apply's result. A
// non-empty dedupKey makes it idempotent across retries from any node; when
// ctx carries the client request's fingerprint (wire.FingerprintOf) and the
// cluster checks them, another request with the same key is refused
// (errs.IdempotencyKeyReused).
func (r *Router) Propose(ctx context.Context, p uint64, dedupKey string, cmd []byte) ([]byte, error) {
	id := multiraft.NewProposalID()
	if dedupKey != "" {
		id = multiraft.ClientProposalID(dedupKey)
		// The cluster's protocol asked afresh, not cached: an older
		// replica would apply what a checked id refuses.
		if fp := wire.FingerprintOf(ctx); fp != nil && (r.d.ClusterProtocol == nil || r.d.ClusterProtocol() >= multiraft.IdempotencyCheckProtocol) {
			id = multiraft.CheckedClientProposalID(dedupKey, fp.Sum())
		}
	}
	return r.propose(ctx, p, id, cmd)
}

// propose retries one proposal id until it is applied or ctx ends.
func (r *Router) propose(ctx context.Context, p uint64, id, cmd []byte) ([]byte, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ctx = transport.WithDialWait(ctx, forwardDialWait)
	var lastErr error
	for attempt := 0; ; attempt++ {
		target := r.leaderAddr(p, attempt)
		var res []byte
		var err error
		switch {
		case target == "":
			err = errs.New(errs.Unavailable, "no leader known for partition %d", p)
		case target == r.d.Self:
			res, err = r.d.Engine.Propose(ctx, p, id, cmd)
		default:
			res, err = r.remotePropose(ctx, target, p, id, cmd)
		}
		if err == nil {
			return res, nil
		}
		lastErr = err
		var nl *multiraft.NotLeaderError
		if errors.As(err, &nl) {
			r.hintLeader(p, nl.Leader)
		} else if !retryable(err) {
			return nil, err
		} else if errors.Is(err, transport.ErrUnreachable) {
			r.forgetHint(p, target)
		}
		if !sleepBackoff(ctx, attempt) {
			if errs.Is(lastErr, errs.Timeout) {
				return nil, lastErr
			}
			return nil, errs.Wrap(errs.Unavailable, lastErr, "partition %d has no reachable leader", p)
		}
	}
}

// remotePropose forwards one attempt of a proposal to the node at addr: in
// the binary encoding once the cluster speaks BinaryProtocol, else in JSON
// (callPreferBinary).
func (r *Router) remotePropose(ctx context.Context, addr string, p uint64, id, cmd []byte) ([]byte, error) {
	req := ProposeRequest{Group: p, ID: id, Cmd: cmd}
	var rep Reply
	_, err := callPreferBinary(ctx, r.d.Caller, addr, MethodPropose, r.protocol.atLeast(BinaryProtocol, r.d.ClusterProtocol),
		func() []byte { return AppendProposeRequest(nil, req) },
		func() []byte { b, _ := json.Marshal(req); return b }, &rep)
	if err != nil {
		return nil, err
	}
	if err := rep.Err(p); err != nil {
		return nil, err
	}
	return rep.Result, nil
}

// forwardDialWait bounds how long one attempt of a forwarded proposal or
// read waits for a connection to its target (transport.WithDialWait). A
// node that stopped may keep its address in the others' views (a leader
// hint, a replica list, a name the cluster DNS still resolves) while
// nothing answers there any more, and a dial there takes the transport's
// whole dial timeout (5 s) to fail. Past this wait the attempt moves on,
// and the dial goes on for later attempts: a reachable peer connects (TCP,
// TLS, handshake) in milliseconds.
const forwardDialWait = 250 * time.Millisecond

// retryable reports whether a failed attempt may be tried again, here or
// elsewhere: the engine's conditions (not the leader, no replica here,
// closed), an unreachable node, a remote read that must start again, and
// the retryable user-facing codes. A user's NotFound is an answer, never a
// reason to ask elsewhere.
func retryable(err error) bool {
	var nl *multiraft.NotLeaderError
	switch {
	case errors.As(err, &nl), multiraft.IsNoReplica(err), errors.Is(err, multiraft.ErrClosed),
		errors.Is(err, transport.ErrUnreachable), errors.Is(err, errReadMoved), errors.Is(err, errSessionGone):
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
	return context.WithTimeout(ctx, DefaultRequestTimeout)
}

// LeaderAddr is the node a request for partition p should go to on its
// attempt-th try (attempt counts from 0): see leaderAddr. Other owners of
// per-partition work (the per-user limiter) route by it too.
func (r *Router) LeaderAddr(p uint64, attempt int) string { return r.leaderAddr(p, attempt) }

// LeaderReplica returns the replica this node believes leads partition p:
// its own replica's view, else the last hint another node gave; 0 when it
// knows of none.
func (r *Router) LeaderReplica(p uint64) uint64 {
	if lead, _ := r.d.Engine.Leader(p); lead != 0 {
		return lead
	}
	return r.leaderHint(p)
}

// HintLeader records that replica leads partition g, as another node said.
func (r *Router) HintLeader(g, replica uint64) { r.hintLeader(g, replica) }

// leaderAddr picks the node to send partition p's proposals to: the local
// replica's view of the leader, then the last hint, then the replicas in turn.
func (r *Router) leaderAddr(p uint64, attempt int) string {
	if lead, local := r.d.Engine.Leader(p); local {
		return r.d.Self
	} else if lead != 0 && attempt%4 != 3 {
		if addr, ok := r.d.Directory.AddrOf(lead); ok {
			return addr
		}
	}
	if lead := r.leaderHint(p); lead != 0 && attempt%4 != 3 {
		if addr, ok := r.d.Directory.AddrOf(lead); ok {
			return addr
		}
	}
	addrs := r.d.Directory.ReplicaAddrs(p)
	if len(addrs) == 0 {
		return ""
	}
	return addrs[attempt%len(addrs)]
}

func (r *Router) hintLeader(g, replica uint64) {
	r.hintMu.Lock()
	r.hints[g] = replica
	r.hintMu.Unlock()
}

// forgetHint drops the leader hint of group g when it names the node at
// addr, which could not be reached: the next attempts try the local view
// and the replicas instead of the same node again.
func (r *Router) forgetHint(g uint64, addr string) {
	lead := r.leaderHint(g)
	if lead == 0 {
		return
	}
	if a, ok := r.d.Directory.AddrOf(lead); !ok || a != addr {
		return
	}
	r.hintMu.Lock()
	if r.hints[g] == lead {
		delete(r.hints, g)
	}
	r.hintMu.Unlock()
}

func (r *Router) leaderHint(g uint64) uint64 {
	r.hintMu.Lock()
	defer r.hintMu.Unlock()
	return r.hints[g]
}
