package node

import (
	"errors"
	"fmt"
	"github.com/parley-chat/parley/internal/compat"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/backup"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/storage"
)

// restoredTerm is the Raft term a restored partition starts in: the new
// cluster's groups have a log of their own, so the source's terms mean
// nothing there.
const restoredTerm = 1

// Restore makes dir the data directory of the first node of a new cluster
// whose partitions start from a backup: open is called twice, to read the
// whole file and check every checksum first (a corrupt file is refused
// before anything is written), then to seed each partition (groups 1..P)
// as if its bootstrap replica had installed a Raft snapshot of the
// backed-up state at the backed-up applied index. The metadata group is
// not restored: the node started on dir with `parley serve` creates a new
// cluster (new id, CA, join token, cluster map) with the backup's
// partitions, and other nodes join it as usual and get their replicas by
// Raft snapshots. dir must be empty or absent; on any failure what Restore
// wrote is removed.
func Restore(dir string, open func() (io.ReadCloser, error)) (*backup.Summary, error) {
	if err := emptyDir(dir); err != nil {
		return nil, err
	}
	sum, err := readBackup(open, backup.Visitor{})
	if err != nil {
		return nil, err
	}
	if f := sum.Header.DataFormat; f < compat.MinDataFormat || f > compat.DataFormat {
		return nil, fmt.Errorf("the backup holds data format %d and this build restores formats %d to %d: restore it with a build that reads it (parley --version names the formats a build reads)",
			f, compat.MinDataFormat, compat.DataFormat)
	}
	existed := true
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		existed = false
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	err = seed(dir, sum.Header.Partitions, open)
	if err != nil {
		if existed {
			clearDir(dir)
		} else {
			_ = os.RemoveAll(dir)
		}
		return nil, err
	}
	return sum, nil
}

// seed writes every partition of the backup into a new store in dir.
func seed(dir string, partitions int, open func() (io.ReadCloser, error)) (err error) {
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return fmt.Errorf("open store in %s: %w", dir, err)
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	ids := placement.BootstrapReplicas(partitions)
	var cur *storage.GroupSeed
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	_, err = readBackup(open, backup.Visitor{
		Section: func(g, _ uint64) error {
			if g == placement.MetaGroup {
				return nil
			}
			s, err := db.SeedGroup(g)
			cur = s
			return err
		},
		Pair: func(k, v []byte) error {
			if cur == nil {
				return nil
			}
			return cur.Set(k, v)
		},
		SectionEnd: func(info backup.SectionInfo) error {
			if cur == nil {
				return nil
			}
			s := cur
			cur = nil
			if info.Applied == 0 {
				return fmt.Errorf("partition %d of the backup has applied index 0: not a backup of a running partition", info.Group)
			}
			return s.Finish(raftpb.SnapshotMetadata{Index: info.Applied, Term: restoredTerm,
				ConfState: raftpb.ConfState{Voters: []uint64{ids[info.Group]}}})
		},
	})
	return err
}

// readBackup reads the whole backup open returns with v.
func readBackup(open func() (io.ReadCloser, error), v backup.Visitor) (*backup.Summary, error) {
	rc, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return backup.Read(rc, v)
}

// emptyDir refuses a data directory that holds anything.
func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("data dir %s: %w", dir, err)
	case len(ents) > 0:
		return fmt.Errorf("data dir %s is not empty: a backup is restored into the empty data dir of a new cluster's first node", dir)
	}
	return nil
}

// clearDir removes what is in dir (best effort: it is being given back
// empty after a failed restore).
func clearDir(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// checkRestored refuses to start on a data directory seeded by Restore
// (partition groups, no node record, no metadata group) with settings that
// would not create the cluster it was seeded for: the node must create the
// cluster, with the backup's number of partitions.
func (n *Node) checkRestored() error {
	if n.rec.Load() != nil {
		return nil
	}
	groups, err := n.db.Groups()
	if err != nil || len(groups) == 0 || groups[0] == placement.MetaGroup {
		return err
	}
	p := len(groups)
	if groups[p-1] != uint64(p) {
		return fmt.Errorf("data dir %s holds partitions %v but no node record: not a data dir restored by parley restore", n.cfg.DataDir, groups)
	}
	switch {
	case !n.cfg.MayCreate():
		return fmt.Errorf("data dir %s was restored from a backup: its node creates a new cluster, so start it without --join (others join it)", n.cfg.DataDir)
	case n.cfg.Partitions != p:
		return fmt.Errorf("data dir %s was restored from a backup of %d partitions: start it with --partitions %d", n.cfg.DataDir, p, p)
	}
	return nil
}
