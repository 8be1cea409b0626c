package multiraft

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/state"
)

// Keys starting with 0x00 in a partition's state belong to the engine; domain
// state machines use keys starting with a printable tag.
var (
	keyLastTime    = []byte("\x00time")   // last applied leader time, to keep time non-decreasing
	prefixDedup    = []byte("\x00dedup/") // id -> expiry(varint) result
	prefixDedupExp = []byte("\x00dexp/")  // expiry(8 bytes BE) id -> ""
	keyDedupRule   = []byte("\x00drule")  // the expiry rule in force (one byte), absent: rule 1
)

// How expired dedup records are deleted. Rule 1, the first: at most 8 at
// indexes divisible by 16, half a record per entry, fewer than commands make
// under steady writes, so the records grew without bound. Rule 2: at most
// 64 after every command. Rule 3 expires as rule 2 and stores each new
// record inline: one key under prefixDedupExp, ordered by expiry, holding
// the result (the cache answers lookups), instead of a record and an index
// key; records made before it stay split until they expire. Every replica
// must store and delete the same records at the same index (they are in
// the state sums), so a group switches rules at one index of its log: the
// dedupRuleCommand its leader proposes once every node speaks the rule's
// protocol.
const (
	expireEvery          = 16 // rule 1: at indexes divisible by it
	maxExpiredPerApply   = 8  // rule 1: per such index
	maxExpiredPerCommand = 64 // rule 2: after every command
	// DedupRuleProtocol is the internal protocol from which the command
	// switching to rule 2 may be proposed (compat.Protocol).
	DedupRuleProtocol = 2
	// DedupInlineProtocol is the internal protocol from which the command
	// switching to rule 3 may be proposed.
	DedupInlineProtocol = 3
	opDedupRule         = 'D'
	dedupRuleEager      = 2 // rule 2: after every command, and sweeps when idle
	dedupRuleInline     = 3 // rule 3: as rule 2, each new record one key
	dedupRuleLatest     = dedupRuleInline
	// dedupInlineTag starts the value of an inline record (the index
	// keys of split records are empty).
	dedupInlineTag = 'r'
	// Under rule 2, a leader whose group applied no command for dedupIdle
	// while some of its records expired proposes dedup sweeps, each
	// deleting up to maxExpiredPerSweep, at most one every
	// dedupSweepEvery: an idle group does not keep a burst's records.
	opDedupSweep       = 'X'
	maxExpiredPerSweep = 1024
	dedupIdle          = time.Second
	dedupSweepEvery    = 100 * time.Millisecond
)

// dedupSweepCommand is the engine-reserved command that deletes up to
// maxExpiredPerSweep expired records (rule 2; under rule 1 it does nothing).
func dedupSweepCommand() []byte { return []byte{reservedTag, opDedupSweep} }

// isDedupSweep reports whether cmd is a dedup sweep.
func isDedupSweep(cmd []byte) bool {
	return len(cmd) == 2 && cmd[0] == reservedTag && cmd[1] == opDedupSweep
}

// dedupRuleCommand is the engine-reserved command that moves a group to
// rule from the index it applies at.
func dedupRuleCommand(rule byte) []byte { return []byte{reservedTag, opDedupRule, rule} }

// dedupRuleRetry spaces a leader's proposals of the dedup rule command.
const dedupRuleRetry = 5 * time.Second

// dedupRuleFor returns the newest dedup rule a cluster speaking protocol
// may move to (every replica must know it), 1 when none newer than the
// first.
func dedupRuleFor(protocol int) byte {
	switch {
	case protocol >= DedupInlineProtocol:
		return dedupRuleInline
	case protocol >= DedupRuleProtocol:
		return dedupRuleEager
	}
	return 1
}

// maybeProposeDedupCommand runs from the loop's tick for a group this node
// leads. From rule 2 on, it proposes sweeps of expired records while the
// group is idle. Before the newest rule the cluster's protocol allows, it
// proposes the command moving the group to it, at most once every
// dedupRuleRetry, until the group applied it.
func (e *Engine) maybeProposeDedupCommand(g *group, now time.Time) {
	if !g.isLeader || g.dedup == nil {
		return
	}
	if g.dedup.rule >= dedupRuleEager {
		// Sweep what an idle group's records left expired.
		if g.lastCommand != g.idleMark {
			g.idleMark, g.idleSince = g.lastCommand, now
		}
		if !now.Before(g.dedupSweepNext) && now.Sub(g.idleSince) >= dedupIdle && g.dedup.expiredBefore(now.Add(-dedupIdle).UnixMilli()) {
			g.dedupSweepNext = now.Add(dedupSweepEvery)
			e.proposeInBackground(g.id, dedupSweepCommand(), dedupSweepEvery)
		}
	}
	if g.dedup.rule >= dedupRuleLatest || e.cfg.ClusterProtocol == nil || now.Before(g.dedupRuleNext) {
		return
	}
	g.dedupRuleNext = now.Add(dedupRuleRetry)
	if rule := dedupRuleFor(e.cfg.ClusterProtocol()); rule > g.dedup.rule {
		e.proposeInBackground(g.id, dedupRuleCommand(rule), dedupRuleRetry)
	}
}

// proposeInBackground proposes an engine-reserved command to group id off
// the loop, giving up after timeout (the loop proposes it again later).
func (e *Engine) proposeInBackground(id uint64, cmd []byte, timeout time.Duration) {
	e.bgWG.Add(1)
	go func() {
		defer e.bgWG.Done()
		ctx, cancel := context.WithTimeout(e.bgCtx, timeout)
		defer cancel()
		if _, err := e.Propose(ctx, id, NewProposalID(), cmd); err != nil {
			e.log.Debug("engine command not proposed", "group", id, "op", string(cmd[1:2]), "err", err)
		}
	}()
}

// dedupRuleOf returns the rule a dedup-rule command asks for.
func dedupRuleOf(cmd []byte) (byte, bool) {
	if len(cmd) != 3 || cmd[0] != reservedTag || cmd[1] != opDedupRule {
		return 0, false
	}
	return cmd[2], true
}

func dedupKey(id []byte) []byte {
	return append(append(make([]byte, 0, len(prefixDedup)+len(id)), prefixDedup...), id...)
}

func dedupExpKey(expiry int64, id []byte) []byte {
	k := make([]byte, 0, len(prefixDedupExp)+8+len(id))
	k = append(k, prefixDedupExp...)
	k = binary.BigEndian.AppendUint64(k, uint64(expiry))
	return append(k, id...)
}

// splitResult returns the result a split record (rules 1 and 2) holds for
// id; whether the record is live is the cache's to say.
func splitResult(r state.Reader, id []byte) ([]byte, error) {
	v, ok, err := r.Get(dedupKey(id))
	if err != nil {
		return nil, err
	}
	_, n := binary.Varint(v)
	if !ok || n <= 0 {
		return nil, fmt.Errorf("multiraft: corrupt or missing dedup record")
	}
	return v[n:], nil
}

// recordDedup remembers id's result until nowMs+windowMs.
func recordDedup(w state.Writer, id []byte, nowMs, windowMs int64, result []byte) error {
	exp := nowMs + windowMs
	v := binary.AppendVarint(make([]byte, 0, 10+len(result)), exp)
	v = append(v, result...)
	if err := w.Set(dedupKey(id), v); err != nil {
		return err
	}
	return w.Set(dedupExpKey(exp, id), nil)
}
