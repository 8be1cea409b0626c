package node

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

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

// quarantinedPrefix starts the name of the subdirectory a rebuild sets a
// quarantined data directory's contents aside in.
const quarantinedPrefix = "quarantined-"

// setAsideQuarantined moves the contents of the quarantined data directory
// (why: the store's refusal) into a new subdirectory of it,
// quarantined-TIME, kept for investigation, and marks this start a rebuild:
// the node joins again under its id (--rebuild-quarantined). Moving within
// the directory works where it is a mount point (a Kubernetes volume);
// sets aside earlier stay where they are. It returns nil once the
// directory holds nothing else.
func (n *Node) setAsideQuarantined(why error) error {
	fs := n.dataFS()
	dir := n.cfg.DataDir
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("%w; set it aside: %w", why, err)
	}
	aside := fs.PathJoin(dir, quarantinedPrefix+time.Now().UTC().Format("20060102T150405.000Z"))
	if err := fs.MkdirAll(aside, 0o750); err != nil {
		return fmt.Errorf("%w; set it aside: %w", why, err)
	}
	for _, name := range names {
		if strings.HasPrefix(name, quarantinedPrefix) {
			continue
		}
		if err := fs.Rename(fs.PathJoin(dir, name), fs.PathJoin(aside, name)); err != nil {
			return fmt.Errorf("%w; set it aside: %w", why, err)
		}
	}
	if d, err := fs.OpenDir(dir); err == nil {
		err = d.Sync()
		_ = d.Close()
		if err != nil {
			return fmt.Errorf("%w; set it aside: sync %s: %w", why, dir, err)
		}
	}
	n.rebuilding = true
	n.log.Warn("the data dir was quarantined: its contents are set aside and this node joins again under its id, copying its replicas from its peers (--rebuild-quarantined)",
		"reason", why, "set_aside_in", aside)
	return nil
}

// resumeRebuild marks this start a rebuild when an earlier one set a
// quarantined directory aside but never finished joining (no node record
// yet, a quarantined-* subdirectory there): started again, the node must
// join as the rebuild it is, and an --initial-node must not take the
// now-empty directory for a new cluster's.
func (n *Node) resumeRebuild() {
	if n.rebuilding || n.rec.Load() != nil || len(n.cfg.Join) == 0 {
		return
	}
	fs := n.dataFS()
	names, _ := fs.List(n.cfg.DataDir)
	for _, name := range names {
		if strings.HasPrefix(name, quarantinedPrefix) {
			n.rebuilding = true
			n.log.Warn("an earlier start set this quarantined data dir aside and did not finish joining: joining again under this id", "set_aside_in", fs.PathJoin(n.cfg.DataDir, name))
			return
		}
	}
}

// dataFS is the file system of the data directory: the one the node was
// given (WithFS), else the operating system's.
func (n *Node) dataFS() vfs.FS {
	if n.fs == nil {
		return vfs.Default
	}
	return n.fs
}
