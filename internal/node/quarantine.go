package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/parley-chat/parley/internal/storage"
)

// scrubEvery is how often a node reads its whole store to verify every
// table block's checksum (storage.DB.Scrub), besides once at start.
const scrubEvery = time.Hour

// storeOpenError explains a failed Open of the store; a quarantined data
// directory gets the way to rebuild the node.
func (n *Node) storeOpenError(err error) error {
	if errors.Is(err, storage.ErrQuarantined) {
		return fmt.Errorf("data dir %s holds corrupt data and is quarantined (%w); "+
			"start it with --rebuild-quarantined to have it set aside and rejoin; or move it away (keep it to investigate), remove this node from the cluster (parley cluster remove %s, once the cluster sees it dead) and start it on an empty data dir with --join and --join-token: it joins again and copies its replicas from its peers",
			n.cfg.DataDir, err, n.cfg.ID)
	}
	return fmt.Errorf("open store in %s: %w", n.cfg.DataDir, err)
}

// watchStore scrubs the store at start and every scrubEvery, and stops the
// node (Fatal) once the store found corrupt data — by a scrub, a read or a
// compaction: nothing it holds can be trusted any more, the others serve
// on, and the data directory is marked so that no later start uses it.
func (n *Node) watchStore() {
	scrub := time.NewTimer(0)
	defer scrub.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.db.Quarantined():
			err := n.db.QuarantineErr()
			n.log.Error("the store holds corrupt data: quarantined, stopping; rebuild this node from its peers on an empty data dir (docs/OPERATIONS.md)", "err", err)
			n.stopFatal(fmt.Errorf("data dir %s quarantined: %w", n.cfg.DataDir, err))
			return
		case <-scrub.C:
			start := time.Now()
			if err := n.db.Scrub(n.ctx); err == nil {
				n.log.Debug("store scrubbed: every checksum verified", "took", time.Since(start))
			} else if !errors.Is(err, storage.ErrQuarantined) && n.ctx.Err() == nil {
				n.log.Warn("store scrub stopped", "err", err)
			}
			scrub.Reset(scrubEvery)
		}
	}
}
