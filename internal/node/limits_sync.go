package node

import (
	"context"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/ratelimit"
)

// run sends the slot counts due (releases that settled, renewals) to their
// owners every limitSyncEvery until ctx ends.
func (l *limiter) run(ctx context.Context) {
	t := time.NewTicker(limitSyncEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.sync(ctx, l.holds.Due(l.now()))
	}
}

// sync sends claims to their owners, one call per owner, in parallel. A
// claim that did not reach its owner is due again at the next round.
func (l *limiter) sync(ctx context.Context, claims []ratelimit.Claim) {
	now := l.now()
	byOwner := map[string][]ratelimit.Claim{}
	for _, c := range claims {
		p := l.route.partitionOf(c.Key)
		addr, local := l.route.owner(p, 0)
		switch {
		case local:
			l.holds.Synced(c, l.table.Hold(c.Limit, c.Key, l.holder, c.N, c.Seq, now))
		case addr == "":
			l.holds.Resend(c)
		default:
			byOwner[addr] = append(byOwner[addr], c)
		}
	}
	var wg sync.WaitGroup
	for addr, cs := range byOwner {
		wg.Go(func() { l.syncWith(ctx, addr, cs) })
	}
	wg.Wait()
}

// syncWith sends claims to the owner at addr in calls of at most
// maxLimitOps operations.
func (l *limiter) syncWith(ctx context.Context, addr string, claims []ratelimit.Claim) {
	for len(claims) > 0 {
		batch := claims[:min(len(claims), maxLimitOps)]
		claims = claims[len(batch):]
		req := limitRequest{Holder: l.holder, Ops: make([]limitOp, len(batch))}
		for i, c := range batch {
			req.Ops[i] = limitOp{Group: l.route.partitionOf(c.Key), Limit: c.Limit, Key: c.Key, N: c.N, Seq: c.Seq, Hold: true}
		}
		res, err := l.send(ctx, addr, req)
		if err != nil {
			for _, c := range batch {
				l.holds.Resend(c)
			}
			continue
		}
		for i, c := range batch {
			if res[i].NotLeader {
				l.route.hint(req.Ops[i].Group, res[i].Leader)
				l.holds.Resend(c)
				continue
			}
			l.holds.Synced(c, res[i].N > 0)
		}
	}
}
