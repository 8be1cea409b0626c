package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/internal/storage"
)

// A data directory that may not be used again — its store quarantined
// (quarantine.go: a checksum failed) or its record marked stale (boot.go:
// it went back in time) — makes every start refuse, until it is rebuilt
// from the node's peers. With --rebuild-quarantined (RebuildQuarantined)
// the node does that itself: it sets the directory's contents aside in a
// subdirectory named for the reason (quarantined-TIME or stale-TIME), kept
// for investigation, and joins again under its id flagged as a rebuild
// (join.go), so the member that takes the join replaces the old member —
// once gossip sees it dead, never while it serves.

// Prefixes of the subdirectories a rebuild sets a data directory's
// contents aside in, by the reason the directory may not be used.
const (
	quarantinedPrefix = "quarantined-"
	stalePrefix       = "stale-"
)

// isSetAside reports whether name, an entry of the data directory, holds
// the contents an earlier rebuild set aside.
func isSetAside(name string) bool {
	return strings.HasPrefix(name, quarantinedPrefix) || strings.HasPrefix(name, stalePrefix)
}

// openStore opens the data directory's store. With RebuildQuarantined, a
// directory that may not be used again is first set aside (setAside), and
// an empty store is opened in its place.
func (n *Node) openStore() (*storage.DB, error) {
	open := func() (*storage.DB, error) {
		return storage.Open(n.cfg.DataDir, storage.Options{NoSync: n.cfg.NoSync, FS: n.fs, Logger: n.log})
	}
	db, err := open()
	if !n.cfg.RebuildQuarantined {
		return db, err
	}
	if errors.Is(err, storage.ErrQuarantined) {
		if err := n.setAside(quarantinedPrefix, err); err != nil {
			return nil, err
		}
		return open()
	}
	if err != nil {
		return nil, err
	}
	// Only this node's own directory: another's is refused by loadRecord,
	// named, and left alone.
	if r, ok, _ := readRecord(db); ok && r.Stale != "" && r.ID == n.cfg.ID {
		if err := db.Close(); err != nil {
			return nil, fmt.Errorf("close the stale store: %w", err)
		}
		if err := n.setAside(stalePrefix, fmt.Errorf("the data dir was found stale: %s", r.Stale)); err != nil {
			return nil, err
		}
		return open()
	}
	return db, nil
}

// readRecord reads the node record of db, if it holds one.
func readRecord(db *storage.DB) (*nodeRecord, bool, error) {
	b, ok, err := db.LoadNodeRecord()
	if err != nil || !ok {
		return nil, false, err
	}
	var r nodeRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, false, fmt.Errorf("corrupt node record: %w", err)
	}
	return &r, true, nil
}

// setAside moves the contents of the data directory, which may not be used
// again (why), into a new subdirectory of it, prefix+TIME, and marks this
// start a rebuild: the node joins again under its id. Moving within the
// directory works where it is a mount point (a Kubernetes volume); sets
// aside of earlier rebuilds stay where they are. It returns nil once the
// directory holds nothing else.
func (n *Node) setAside(prefix string, why error) error {
	fs := n.dataFS()
	dir := n.cfg.DataDir
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("%w; set it aside: %w", why, err)
	}
	aside := fs.PathJoin(dir, prefix+time.Now().UTC().Format("20060102T150405.000Z"))
	if err := fs.MkdirAll(aside, 0o750); err != nil {
		return fmt.Errorf("%w; set it aside: %w", why, err)
	}
	for _, name := range names {
		if isSetAside(name) {
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
	n.log.Warn("the data dir may not be used again: its contents are set aside and this node joins again under its id, copying its replicas from its peers (--rebuild-quarantined)",
		"reason", why, "set_aside_in", aside)
	return nil
}

// resumeRebuild marks this start a rebuild when an earlier one set the
// data directory aside but never finished joining (no node record yet, a
// set-aside subdirectory there): started again, the node must join as the
// rebuild it is, and an --initial-node must not take the now-empty
// directory for a new cluster's.
func (n *Node) resumeRebuild() {
	if n.rebuilding || n.rec.Load() != nil || len(n.cfg.Join) == 0 {
		return
	}
	fs := n.dataFS()
	names, _ := fs.List(n.cfg.DataDir)
	for _, name := range names {
		if isSetAside(name) {
			n.rebuilding = true
			n.log.Warn("an earlier start set this data dir aside and did not finish joining: joining again under this id", "set_aside_in", fs.PathJoin(n.cfg.DataDir, name))
			return
		}
	}
}

// warnSetAside logs, at a start, the set-aside copies earlier rebuilds
// left in the data directory and the disk they use: they are kept to be
// looked at and are never deleted by the node, so an operator who missed
// the rebuild's log line learns of them here, once per start. A start that
// rebuilds has said so already.
func (n *Node) warnSetAside() {
	if n.rebuilding {
		return
	}
	fs := n.dataFS()
	names, _ := fs.List(n.cfg.DataDir)
	var dirs []string
	var size int64
	for _, name := range names {
		if !isSetAside(name) {
			continue
		}
		dir := fs.PathJoin(n.cfg.DataDir, name)
		dirs = append(dirs, dir)
		size += treeSize(fs, dir)
	}
	if len(dirs) > 0 {
		n.log.Warn("the data dir holds copies set aside by earlier rebuilds: delete them once looked at",
			"set_aside", dirs, "bytes", size)
	}
}

// treeSize is the total size of the files under dir.
func treeSize(fs vfs.FS, dir string) int64 {
	names, err := fs.List(dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, name := range names {
		p := fs.PathJoin(dir, name)
		st, err := fs.Stat(p)
		switch {
		case err != nil:
		case st.IsDir():
			total += treeSize(fs, p)
		default:
			total += st.Size()
		}
	}
	return total
}

// dataFS is the file system of the data directory: the one the node was
// given (WithFS), else the operating system's.
func (n *Node) dataFS() vfs.FS {
	if n.fs == nil {
		return vfs.Default
	}
	return n.fs
}
