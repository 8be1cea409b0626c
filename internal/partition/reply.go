package partition

import (
	"context"
	"errors"
	"fmt"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
)

// The internal call methods of the request path. The node's table of
// internal methods routes each to Server or Feeds.
const (
	MethodPropose = "propose"      // ProposeRequest -> the command's result
	MethodGet     = "get"          // ReadRequest -> 1 + value, or empty: absent
	MethodScan    = "scan"         // ReadRequest -> a page of pairs (encodePairs)
	MethodRelease = "read.release" // ReleaseRequest -> nothing
	MethodTail    = "stream.tail"  // TailRequest -> TailResult
)

// Reply is the answer to every internal call, the request path's and the
// node's alike: a result, or an error that keeps its meaning across the
// wire. Code is a user-facing errs.Code; NotLeader and Engine are conditions
// of the replication layer that callers act on (retry, ask another node) and
// never show.
type Reply struct {
	Result    []byte    `json:"r,omitempty"`
	Code      errs.Code `json:"code,omitempty"`
	Message   string    `json:"msg,omitempty"`
	NotLeader bool      `json:"nl,omitempty"`
	Leader    uint64    `json:"lead,omitempty"`
	Engine    string    `json:"eng,omitempty"`
	StaleMs   int64     `json:"stale,omitempty"`
	// Applied is the applied index of the snapshot a get or scan read;
	// Session the read session holding it, when the caller asked to hold
	// one (read.go).
	Applied uint64 `json:"ap,omitempty"`
	Session uint64 `json:"ss,omitempty"`
}

// Engine codes: conditions of the replication layer, never users'.
const (
	// engineNoReplica: the node asked holds no replica of the group
	// (multiraft.NoReplicaError).
	engineNoReplica = "no_replica"
	// engineMoved: the replica applied more since the read's first call;
	// the read starts again, holding one snapshot from its first call.
	engineMoved = "moved"
	// engineSessionGone: the read session expired or never existed here.
	engineSessionGone = "session_gone"
)

// errReadMoved and errSessionGone end one attempt of a remote read; Read
// tries again (errReadMoved: holding a snapshot from the first call).
var (
	errReadMoved   = errors.New("partition: the replica moved on since the read began")
	errSessionGone = errors.New("partition: read session gone")
)

// ReplyOf turns a result or an error into a Reply. An error that is neither
// the engine's nor an *errs.Error travels as Unavailable.
func ReplyOf(res []byte, err error) Reply {
	if err == nil {
		return Reply{Result: res}
	}
	var nl *multiraft.NotLeaderError
	switch {
	case errors.As(err, &nl):
		return Reply{NotLeader: true, Leader: nl.Leader, Code: errs.Unavailable, Message: err.Error()}
	case multiraft.IsNoReplica(err):
		return Reply{Engine: engineNoReplica, Message: err.Error()}
	case errors.Is(err, errReadMoved):
		return Reply{Engine: engineMoved, Message: err.Error()}
	case errors.Is(err, errSessionGone):
		return Reply{Engine: engineSessionGone, Message: err.Error()}
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return Reply{Code: e.Code, Message: e.Message}
	}
	return Reply{Code: errs.Unavailable, Message: err.Error()}
}

// Err returns the reply's error, nil for a result; group names the group the
// call was about.
func (r Reply) Err(group uint64) error {
	switch {
	case r.NotLeader:
		return &multiraft.NotLeaderError{Group: group, Leader: r.Leader}
	case r.Engine == engineNoReplica:
		return &multiraft.NoReplicaError{Group: group}
	case r.Engine == engineMoved:
		return errReadMoved
	case r.Engine == engineSessionGone:
		return errSessionGone
	case r.Engine != "":
		// A code from a newer node: a condition of its engine, retryable.
		return errs.New(errs.Unavailable, "%s", r.Message)
	case r.Code != "":
		return errs.New(r.Code, "%s", r.Message)
	}
	return nil
}

// Call sends an internal request and decodes the reply into rep. A call
// that ran out of time is errs.Timeout; other failures of the call itself
// wrap the Caller's error (transport.ErrUnreachable).
func Call(ctx context.Context, c Caller, addr, method string, body []byte, rep *Reply) error {
	b, err := c.Call(ctx, addr, method, body)
	if err != nil {
		if ctx.Err() != nil {
			return errs.Wrap(errs.Timeout, err, "node %s did not answer in time", addr)
		}
		return fmt.Errorf("call %s on %s: %w", method, addr, err)
	}
	if err := decodeReply(method, b, rep); err != nil {
		return fmt.Errorf("bad reply to %s from %s: %w", method, addr, err)
	}
	return nil
}

// ProposeRequest is the body of the propose call: JSON for MethodPropose,
// AppendProposeRequest's encoding for MethodProposeBin.
type ProposeRequest struct {
	Group uint64 `json:"g"`
	ID    []byte `json:"id"`
	Cmd   []byte `json:"cmd"`
}

// ReadRequest is the body of the get and scan calls.
type ReadRequest struct {
	Group        uint64 `json:"g"`
	Linearizable bool   `json:"lin,omitempty"`
	Key          []byte `json:"k,omitempty"`
	Hi           []byte `json:"hi,omitempty"`
	Limit        int    `json:"n,omitempty"`
	// Session reads from a held snapshot (the read's later calls).
	Session uint64 `json:"s,omitempty"`
	// Hold asks the replica to keep the snapshot this call reads for the
	// read's later calls. With Same, only a snapshot at applied index At
	// (the first call's) will do; another fails the call with engineMoved.
	Hold bool   `json:"h,omitempty"`
	Same bool   `json:"same,omitempty"`
	At   uint64 `json:"at,omitempty"`
}

// ReleaseRequest is the body of the read.release call.
type ReleaseRequest struct {
	Session uint64 `json:"s"`
}
