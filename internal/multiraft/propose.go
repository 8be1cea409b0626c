package multiraft

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"time"

	"github.com/parley-chat/parley/internal/errs"
)

// proposal is one local attempt to replicate a command.
type proposal struct {
	group uint64
	id    string
	data  []byte
	done  chan proposalResult // buffered: the loop never blocks on it
	// stamps are the loop's phase timestamps (phases.go); loop-owned, the
	// proposer reads the copy its result carries.
	stamps phaseStamps
}

type proposalResult struct {
	result []byte
	err    error
	stamps phaseStamps
}

func (p *proposal) finish(result []byte, err error) {
	select {
	case p.done <- proposalResult{result, err, p.stamps}:
	default:
	}
}

// NewProposalID returns a random proposal id for a command without a client
// idempotency key. Reuse it for every retry of the same command.
func NewProposalID() []byte {
	id := make([]byte, 17)
	id[0] = 'p'
	_, _ = rand.Read(id[1:])
	return id
}

// ClientProposalID returns the proposal id for a client idempotency key (the
// dedup key already names the user), so retries through any node map to the
// same id.
func ClientProposalID(dedupKey string) []byte {
	return append([]byte{'c'}, dedupKey...)
}

// FingerprintSize is the length of a request fingerprint in a checked
// client proposal id.
const FingerprintSize = 16

// CheckedClientProposalID returns the proposal id for a client idempotency
// key whose request has the given fingerprint (FingerprintSize bytes, the
// same for every retry of the request): a retry returns the first result,
// as with ClientProposalID, and another request with the same key, within
// the key's window, is refused with errs.IdempotencyKeyReused and not
// applied. A result recorded under ClientProposalID(dedupKey) (proposed
// before the cluster checked fingerprints) is returned as it is. Only for a
// cluster that speaks IdempotencyCheckProtocol: an older replica would apply
// the other request.
func CheckedClientProposalID(dedupKey string, fingerprint []byte) []byte {
	return append(checkedKey(dedupKey, FingerprintSize), fingerprint[:FingerprintSize]...)
}

// checkedKey returns the part of the checked ids of dedupKey that names the
// key, with room for spare more bytes.
func checkedKey(dedupKey string, spare int) []byte {
	key := make([]byte, 0, 1+binary.MaxVarintLen64+len(dedupKey)+spare)
	key = append(key, 'C')
	key = binary.AppendUvarint(key, uint64(len(dedupKey)))
	return append(key, dedupKey...)
}

// IdempotencyCheckProtocol is the internal protocol from which checked
// client proposal ids may be proposed (compat.Protocol).
const IdempotencyCheckProtocol = 2

// splitCheckedID returns, for a checked id, the part that names the client
// key (the id without its fingerprint) and the unchecked id of the same key.
func splitCheckedID(id []byte) (key, legacy []byte, ok bool) {
	if len(id) < 1+FingerprintSize || id[0] != 'C' {
		return nil, nil, false
	}
	n, k := binary.Uvarint(id[1:])
	// The length must be exact and minimal, so one key has one id.
	if k <= 0 || n != uint64(len(id)-1-k-FingerprintSize) || k != len(binary.AppendUvarint(nil, n)) {
		return nil, nil, false
	}
	key = id[:len(id)-FingerprintSize]
	return key, ClientProposalID(string(key[1+k:])), true
}

// checkedKeyOf returns, for an unchecked client id (ClientProposalID), the
// part of the checked ids of the same key that names the key.
func checkedKeyOf(id []byte) ([]byte, bool) {
	if len(id) < 1 || id[0] != 'c' {
		return nil, false
	}
	return checkedKey(string(id[1:]), 0), true
}

// errKeyReused is the refusal of a checked id whose client key has a record
// of another request.
func errKeyReused() error {
	return errs.New(errs.IdempotencyKeyReused, "this idempotency key was already used for a different request; send a new key with a new request")
}

// Propose replicates cmd in a group whose leader is the local replica and
// returns Apply's result. id must be the same for every retry of the command
// (NewProposalID or ClientProposalID). It fails with *NotLeaderError when the
// local replica is not the leader, and with a retryable errs.Timeout when the
// attempt's time ran out: the command may or may not have been applied, and
// retrying with the same id is safe. While this node's disk is nearly full
// (storage.DB.CheckSpace) it refuses with errs.InsufficientStorage before
// anything is written, or, while it hands the group to a replica whose disk
// is not full (diskfull.go), with a NotLeaderError naming no leader.
func (e *Engine) Propose(ctx context.Context, groupID uint64, id, cmd []byte) ([]byte, error) {
	if len(id) == 0 || len(id) > 1024 {
		return nil, errs.New(errs.Invalid, "proposal id must be 1 to 1024 bytes")
	}
	g := e.group(groupID)
	if g == nil {
		return nil, &NoReplicaError{Group: groupID}
	}
	if l := g.leader.Load(); l != g.replica {
		return nil, &NotLeaderError{Group: groupID, Leader: l}
	}
	if err := e.cfg.DB.CheckSpace(); err != nil {
		elsewhere := g.handingOver.Load()
		if !elsewhere && !g.shedLooked.Load() {
			elsewhere = e.shedNow(ctx, g) // the disk filled since the loop's last tick
		}
		// Another replica is taking the group over, or took it since the
		// check above (a hand-over can finish before handingOver is read,
		// and then reads false): the write can succeed there.
		if l := g.leader.Load(); elsewhere || l != g.replica {
			if l == g.replica {
				l = 0
			}
			return nil, &NotLeaderError{Group: groupID, Leader: l}
		}
		return nil, errs.Wrap(errs.InsufficientStorage, err, "the disk is full: writes are refused until space is freed; reads still work")
	}
	start := time.Now()
	env := envelope{id: id, timeMs: e.cfg.Now().UnixMilli(), windowMs: e.cfg.DedupWindow.Milliseconds(), cmd: cmd}
	p := &proposal{
		group: groupID,
		id:    string(id),
		data:  env.encode(make([]byte, 0, 32+len(id)+len(cmd))),
		done:  make(chan proposalResult, 1),
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	e.proposals = append(e.proposals, p)
	e.mu.Unlock()
	e.notify()

	timer := time.NewTimer(e.cfg.ProposalAttempt)
	defer timer.Stop()
	select {
	case r := <-p.done:
		if r.err == nil && e.cfg.OnProposal != nil {
			r.stamps.start = start
			if t, ok := r.stamps.times(time.Now()); ok {
				e.cfg.OnProposal(t)
			}
		}
		return r.result, r.err
	case <-ctx.Done():
		e.post(func() { e.forgetProposal(p) })
		return nil, errs.Wrap(errs.Timeout, ctx.Err(), "the write may or may not have been applied; retry with the same idempotency key")
	case <-timer.C:
		e.post(func() { e.forgetProposal(p) })
		return nil, errs.New(errs.Timeout, "the write was not applied in time; retry with the same idempotency key")
	case <-e.done:
		return nil, ErrClosed
	}
}

// startProposal hands a proposal to Raft on the loop goroutine.
func (e *Engine) startProposal(p *proposal) {
	g := e.groups[p.group]
	if g == nil {
		p.finish(nil, &NoReplicaError{Group: p.group})
		return
	}
	if !g.isLeader {
		p.finish(nil, &NotLeaderError{Group: p.group, Leader: g.leader.Load()})
		return
	}
	if err := g.rn.Propose(p.data); err != nil {
		e.stats.ProposalsDropped.Add(1)
		p.finish(nil, &NotLeaderError{Group: p.group, Leader: g.leader.Load()})
		return
	}
	g.proposals[p.id] = append(g.proposals[p.id], p)
	e.markTouched(g)
}

// forgetProposal drops a proposal whose caller gave up waiting.
func (e *Engine) forgetProposal(p *proposal) {
	g := e.groups[p.group]
	if g == nil {
		return
	}
	ps := g.proposals[p.id]
	for i, q := range ps {
		if q == p {
			ps = append(ps[:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(g.proposals, p.id)
	} else {
		g.proposals[p.id] = ps
	}
}
