package node

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/parley-chat/parley/internal/partition"
	"sync"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/placement"
)

const (
	// checksumWait is how long a node waits for its replica to reach the
	// marker.
	checksumWait = 3 * time.Second
	// verifyAttempts bounds the markers proposed per group.
	verifyAttempts = 3
	// verifyParallel is how many groups are verified at once.
	verifyParallel = 4
)

// checksumRequest asks a node for its replica's sum at a marker.
type checksumRequest struct {
	Group  uint64 `json:"g"`
	Marker []byte `json:"m"`
	Index  uint64 `json:"i"`
}

// checksumReply is a node's answer: the sum, or why there is none.
type checksumReply struct {
	Applied uint64 `json:"applied"`
	Sum     uint64 `json:"sum,omitempty"`
	Found   bool   `json:"found,omitempty"`
	// Skipped: the replica applied past the marker without applying it
	// (a snapshot), so a new marker may succeed.
	Skipped bool   `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// localChecksum waits (briefly) for the local replica of a group to apply
// the marker and returns its sum.
func (n *Node) localChecksum(ctx context.Context, req checksumRequest) checksumReply {
	ctx, cancel := context.WithTimeout(ctx, checksumWait)
	defer cancel()
	for n.engine.HasGroup(req.Group) && n.engine.Applied(req.Group) < req.Index && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !n.engine.HasGroup(req.Group) {
		return checksumReply{Error: "no replica on this node"}
	}
	applied := n.engine.Applied(req.Group)
	if sum, ok := n.engine.MarkerChecksum(req.Group, req.Marker, req.Index); ok {
		return checksumReply{Applied: req.Index, Sum: sum, Found: true}
	}
	if applied >= req.Index {
		return checksumReply{Applied: applied, Skipped: true, Error: "caught up by a snapshot past the marker"}
	}
	return checksumReply{Applied: applied, Error: fmt.Sprintf("behind: applied %d, marker at %d", applied, req.Index)}
}

// Verify implements api.ClusterOps. It works group by group (a few at a time): propose a checksum marker
// with a fresh random id through the group's leader; every replica hashes
// the group's state when it applies the marker, all at the same index
// (multiraft.ChecksumCommand); then ask every replica's node for its sum at
// that index, waiting briefly for replicas still behind. A replica caught up
// by a snapshot past the marker never computes it: the group is tried again
// with a new marker. Cost: one scan of each group's state on every replica,
// on that node's driver loop (other groups there wait for the scan).
func (n *Node) Verify(ctx context.Context) (*api.VerifyReport, error) {
	m := n.Map()
	if m == nil {
		return nil, errs.New(errs.Unavailable, "the node does not know the cluster map yet")
	}
	checks := make([]api.PartitionCheck, len(m.Groups))
	sem := make(chan struct{}, verifyParallel)
	var wg sync.WaitGroup
	for i, g := range m.Groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			checks[i] = n.verifyGroup(ctx, m, g)
		}()
	}
	wg.Wait()
	rep := &api.VerifyReport{Partitions: checks}
	for _, c := range checks {
		switch {
		case c.Match:
		case distinctSums(c) > 1:
			rep.Mismatches++
		default:
			rep.Unverified++
		}
	}
	return rep, nil
}

// verifyGroup checks one group's replicas at one marker, trying new markers
// while a replica skipped one by a snapshot.
func (n *Node) verifyGroup(ctx context.Context, m *placement.Map, g placement.Group) api.PartitionCheck {
	var check api.PartitionCheck
	for range verifyAttempts {
		var skipped bool
		check, skipped = n.verifyOnce(ctx, m, g)
		if !skipped || ctx.Err() != nil {
			break
		}
	}
	return check
}

// verifyOnce proposes one marker to group g and gathers its replicas' sums;
// skipped reports that some replica jumped over the marker.
func (n *Node) verifyOnce(ctx context.Context, m *placement.Map, g placement.Group) (check api.PartitionCheck, skipped bool) {
	check = api.PartitionCheck{Group: g.ID, Replicas: make([]api.ReplicaCheck, len(g.Replicas))}
	for i, r := range g.Replicas {
		check.Replicas[i] = api.ReplicaCheck{Node: r.Node, Replica: r.ID}
	}
	marker := make([]byte, 16)
	_, _ = rand.Read(marker)
	pctx, cancel := context.WithTimeout(ctx, partition.DefaultRequestTimeout)
	res, err := n.router.Propose(pctx, g.ID, "", multiraft.ChecksumCommand(marker))
	cancel()
	var index uint64
	if err == nil {
		index, _, err = multiraft.DecodeChecksumResult(res)
	}
	if err != nil {
		for i := range check.Replicas {
			check.Replicas[i].Error = "no marker: " + errMessage(err)
		}
		return check, false
	}
	check.Applied = index
	req := checksumRequest{Group: g.ID, Marker: marker, Index: index}
	var wg sync.WaitGroup
	replies := make([]checksumReply, len(g.Replicas))
	for i, r := range g.Replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd, ok := m.Node(r.Node)
			if !ok {
				replies[i] = checksumReply{Error: "node not in the cluster map"}
				return
			}
			cctx, cancel := context.WithTimeout(ctx, checksumWait+time.Second)
			defer cancel()
			if err := n.ask(cctx, *nd, methodChecksum, req, &replies[i]); err != nil {
				replies[i] = checksumReply{Error: "unreachable: " + errMessage(err)}
			}
		}()
	}
	wg.Wait()
	check.Match = true
	for i, rep := range replies {
		rc := &check.Replicas[i]
		rc.Applied, rc.Error = rep.Applied, rep.Error
		if rep.Found {
			rc.Checksum = fmt.Sprintf("%016x", rep.Sum)
		}
		skipped = skipped || rep.Skipped
		check.Match = check.Match && rep.Found && rc.Checksum == check.Replicas[0].Checksum
	}
	return check, skipped
}

// distinctSums counts the different checksums the replicas reported.
func distinctSums(c api.PartitionCheck) int {
	seen := map[string]bool{}
	for _, r := range c.Replicas {
		if r.Checksum != "" {
			seen[r.Checksum] = true
		}
	}
	return len(seen)
}

// errMessage is an error's text for an operator report: the message of an
// errs.Error, without its wrapped cause.
func errMessage(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
