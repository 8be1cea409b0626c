package partition

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/transport"
)

// Read runs fn against partition p's state as it was at one moment (see
// state.Reader): a snapshot of this node's replica, or of one replica node's
// when this node holds none. Linearizable reads wait for a quorum-confirmed
// read index first; stale reads use the nearest replica and report how stale
// it may be (ms). A failed attempt (no leader, the replica moved away or was
// destroyed mid-read, a node unreachable) runs fn again, so fn must have no
// effect beyond what it returns; fn's own error is returned as it came.
func (r *Router) Read(ctx context.Context, p uint64, stale bool, fn func(state.Reader) error) (int64, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	ctx = transport.WithDialWait(ctx, forwardDialWait)
	var lastErr error
	hold := false // hold a snapshot on the replica node from the first call
	for attempt := 0; ; attempt++ {
		ms, fnErr, err := r.ReadLocal(ctx, p, !stale, fn)
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
			if addr == "" || addr == r.d.Self {
				lastErr = errs.New(errs.Unavailable, "no replica of partition %d reachable", p)
				break
			}
			ms, fnErr, err := r.readRemote(ctx, addr, p, !stale, hold, fn)
			if err == nil {
				return ms, fnErr
			}
			lastErr = err
			if errors.Is(err, errReadMoved) {
				hold = true
				continue // at once: the node answers, it only moved on
			}
			if !retryable(err) {
				return 0, err
			}
			if errors.Is(err, transport.ErrUnreachable) {
				r.forgetHint(p, addr)
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

// ReadLocal runs fn on one snapshot of this node's replica of group p: after
// a read index when linearizable, else with how stale the replica may be
// (ms). It returns a multiraft.NoReplicaError when the node holds no
// replica, a read-index failure as it came, and an Unavailable error when
// the replica was closed — its state destroyed, perhaps opened again empty —
// while fn read it: the snapshot fn read is whole, but a replica that went
// away is not trusted to answer (see DESIGN.md, "Reads while replicas
// move"). fn's own error is fnErr.
func (r *Router) ReadLocal(ctx context.Context, p uint64, linearizable bool, fn func(state.Reader) error) (staleMs int64, fnErr, err error) {
	snap, err := r.d.snapshotLocal(ctx, p, linearizable)
	if err != nil {
		return 0, nil, err
	}
	defer snap.close()
	fnErr = fn(snap)
	if !snap.current() {
		return 0, nil, errClosedDuringRead(p)
	}
	return snap.staleMs, fnErr, nil
}

// readRemote runs fn once against the replica of p on the node at addr.
// err is the failure of a call fn made (fn's answer is then worthless,
// whatever it returned), fnErr fn's own error.
func (r *Router) readRemote(ctx context.Context, addr string, p uint64, linearizable, hold bool, fn func(state.Reader) error) (staleMs int64, fnErr, err error) {
	rr := &remoteReader{ctx: ctx, caller: r.d.Caller, addr: addr, group: p, linearizable: linearizable, hold: hold,
		binary: r.protocol.atLeast(BinaryProtocol, r.d.ClusterProtocol)}
	fnErr = fn(rr)
	if rr.session != 0 && !errors.Is(rr.err, transport.ErrUnreachable) && !errs.Is(rr.err, errs.Timeout) {
		rr.release()
	}
	if rr.err != nil {
		return 0, nil, rr.err
	}
	return rr.staleMs, fnErr, nil
}

// scanPage is how many pairs one scan call returns at most.
const scanPage = 512

// releaseTimeout bounds the call that releases a read session; a session
// not released expires on the replica node after sessionIdle.
const releaseTimeout = time.Second

// remoteReader reads another node's replica through get and scan calls, all
// from one snapshot of it. The first call of a linearizable read waits for
// that replica's read index. A read of one call holds nothing on the
// replica node. A second call asks the node to take a snapshot at the first
// call's applied index and hold it as a session for the calls after it;
// when the replica applied more in between, the attempt fails with
// errReadMoved and Read runs fn again, holding a session from the first
// call (hold). The session is released when fn returns.
type remoteReader struct {
	ctx          context.Context
	caller       Caller
	addr         string
	group        uint64
	linearizable bool
	hold         bool
	binary       bool // calls in the binary encoding (callPreferBinary)

	calls   int
	applied uint64 // the first call's snapshot
	session uint64 // the held snapshot, 0 for none
	err     error  // the first failed call; every later call fails alike
	staleMs int64
}

var _ state.Reader = (*remoteReader)(nil)

func (rr *remoteReader) call(method string, req ReadRequest) ([]byte, error) {
	if rr.err != nil {
		return nil, rr.err
	}
	req.Group = rr.group
	switch {
	case rr.session != 0:
		req.Session = rr.session
	case rr.calls == 0:
		req.Linearizable, req.Hold = rr.linearizable, rr.hold
	default:
		req.Hold, req.Same, req.At = true, true, rr.applied
	}
	var rep Reply
	binaryOK, err := callPreferBinary(rr.ctx, rr.caller, rr.addr, method, rr.binary,
		func() []byte { return AppendReadRequest(nil, req) },
		func() []byte { b, _ := json.Marshal(req); return b }, &rep)
	rr.binary = rr.binary && binaryOK
	if err == nil {
		err = rep.Err(rr.group)
	}
	if err != nil {
		rr.err = err
		return nil, err
	}
	if rr.calls == 0 {
		rr.applied = rep.Applied
	}
	rr.calls++
	if rep.Session != 0 {
		rr.session = rep.Session
	}
	rr.staleMs = max(rr.staleMs, rep.StaleMs)
	return rep.Result, nil
}

// release ends the read's session on the replica node (best effort).
func (rr *remoteReader) release() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rr.ctx), releaseTimeout)
	defer cancel()
	body, _ := json.Marshal(ReleaseRequest{Session: rr.session})
	_, _ = rr.caller.Call(ctx, rr.addr, MethodRelease, body)
}

// Get implements state.Reader.
func (rr *remoteReader) Get(key []byte) ([]byte, bool, error) {
	res, err := rr.call(MethodGet, ReadRequest{Key: key})
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
		res, err := rr.call(MethodScan, ReadRequest{Key: lo, Hi: hi, Limit: scanPage})
		if err != nil {
			return err
		}
		pairs, err := decodePairs(res)
		if err != nil {
			rr.err = err
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

// Applied returns the applied index of the snapshot the read sees (one
// call first when none was made), as the local snapshot's Applied does: a
// reader that must say which moment it read (a backup) asks either.
func (rr *remoteReader) Applied() (uint64, error) {
	if rr.calls == 0 {
		if _, _, err := rr.Get(nil); err != nil {
			return 0, err
		}
	}
	return rr.applied, nil
}
