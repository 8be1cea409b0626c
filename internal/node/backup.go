package node

import (
	"context"
	"errors"
	"github.com/parley-chat/parley/internal/compat"
	"io"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/backup"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/state"
)

// The node streams backups (api.BackupSource) beside its admin routes.
var _ api.BackupSource = (*Node)(nil)

// BackupManifest implements api.BackupSource from the local cluster map.
func (n *Node) BackupManifest(context.Context) (*api.BackupManifest, error) {
	m := n.Map()
	if m == nil {
		return nil, errs.New(errs.Unavailable, "the node does not know the cluster map yet")
	}
	return &api.BackupManifest{ClusterID: m.ClusterID, Hash: m.Hash, Partitions: m.Partitions,
		ReplicationFactor: m.ReplicationFactor, DataFormat: compat.DataFormat}, nil
}

// errBackupRetried stops a read the request path wants to run again after
// part of the section was sent: the stream is cut and the client asks for
// the group again.
var errBackupRetried = errors.New("the read of the group was interrupted after its section started")

// appliedReader is a state.Reader that says which applied index it reads:
// the local snapshot and the remote reader of the request path both are.
type appliedReader interface {
	Applied() (uint64, error)
}

// BackupGroup implements api.BackupSource: one snapshot of group's state,
// taken after a read index (so it holds every write acknowledged before the
// call), written as a backup section. A partition is read on this node's
// replica when it has one, else on a replica node through the request
// path's read sessions (pages of pairs from one held snapshot). The
// metadata group, which every node replicates, is read here, without its
// secrets (placement.SecretPrefix): a restored cluster makes its own.
func (n *Node) BackupGroup(ctx context.Context, group uint64, w io.Writer) error {
	m := n.Map()
	if m == nil {
		return errs.New(errs.Unavailable, "the node does not know the cluster map yet")
	}
	if group > uint64(m.Partitions) {
		return errs.New(errs.NotFound, "no group %d: the cluster has the metadata group 0 and partitions 1..%d", group, m.Partitions)
	}
	started := false
	read := func(r state.Reader) error {
		if started {
			return errBackupRetried
		}
		ar, ok := r.(appliedReader)
		if !ok {
			return errs.New(errs.Internal, "the read of group %d cannot say its applied index", group)
		}
		applied, err := ar.Applied()
		if err != nil {
			return err
		}
		var sw *backup.SectionWriter
		start := func() {
			if sw == nil {
				started = true
				sw = backup.NewSectionWriter(w, group, applied)
			}
		}
		var werr error
		err = r.Scan(nil, nil, func(k, v []byte) bool {
			if group == placement.MetaGroup && placement.IsSecretKey(k) {
				return true
			}
			start()
			werr = sw.Pair(k, v)
			return werr == nil
		})
		if err = errors.Join(err, werr); err != nil {
			return err
		}
		start()
		_, err = sw.Finish()
		return err
	}
	if group == placement.MetaGroup {
		_, fnErr, err := n.router.ReadLocal(ctx, group, true, read)
		return errors.Join(err, fnErr)
	}
	_, err := n.router.Read(ctx, group, false, read)
	return err
}
