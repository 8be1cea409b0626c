package node

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/partition"
	"github.com/parley-chat/parley/internal/search"
	"github.com/parley-chat/parley/internal/state"
)

// startSearch makes the node's chat search (internal/search): an index per
// local partition replica, fed by the apply notifier's touches of rooms,
// and the searcher that fans a search out to one replica of every
// partition. The indexers run once Start runs them (runSearch).
func (n *Node) startSearch() {
	n.indexes = search.NewIndexes(search.Config{
		Read: func(ctx context.Context, p uint64, fn func(state.Reader) error) error {
			_, fnErr, err := n.router.ReadLocal(ctx, p, false, fn)
			if err != nil {
				return err
			}
			return fnErr
		},
		Applied:  n.engine.Applied,
		Replicas: n.searchReplicas,
		Disabled: n.cfg.NoSearchIndex,
		Dir:      n.searchDir(),
		Logger:   n.log,
	})
	n.notes.Observe(chat.Tag, n.indexes.Touched)
	n.searcher = search.NewSearcher(search.SearcherConfig{
		Local:           n.indexes,
		Partitions:      n.router.Partitions,
		ReplicaAddrs:    n.searchAddrs,
		Self:            n.self(),
		Remote:          n.searchRemote,
		ClusterProtocol: n.ClusterProtocol,
	})
}

// searchDir is where the search indexes keep their files: the configured
// directory, else one of the data dir; emptied at every start (the indexes
// are rebuilt from the replicas). Without either (a store not on the
// operating system's file system: tests) the system's temporary directory.
func (n *Node) searchDir() string {
	if n.cfg.SearchDir != "" {
		return n.cfg.SearchDir
	}
	if n.fs != nil {
		return ""
	}
	return filepath.Join(n.cfg.DataDir, "search")
}

// runSearch runs the indexers until the node stops, after removing what an
// earlier run left.
func (n *Node) runSearch() {
	if err := n.indexes.RemoveStale(); err != nil {
		n.log.Warn("stale search indexes not removed", "err", err)
	}
	n.indexes.Run(n.ctx)
}

// searchRemote makes the search.partition call to the node at addr.
func (n *Node) searchRemote(ctx context.Context, addr string, req search.PartitionRequest) ([]search.Result, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var rep partition.Reply
	if err := n.call(ctx, addr, search.Method, body, &rep); err != nil {
		return nil, err
	}
	if err := rep.Err(req.Partition); err != nil {
		return nil, err
	}
	var res []search.Result
	if err := json.Unmarshal(rep.Result, &res); err != nil {
		return nil, fmt.Errorf("bad search answer from %s: %w", addr, err)
	}
	return res, nil
}

// callSearch answers a search.partition call from this node's index of the
// partition. The caller is a member node (HandleCall's rule); the user it
// names is the one its API authenticated, and this node applies that
// user's permissions from its own replica's state.
func (n *Node) callSearch(ctx context.Context, _ string, body []byte) (partition.Reply, error) {
	var req search.PartitionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return partition.Reply{}, fmt.Errorf("bad search request: %w", err)
	}
	res, err := n.indexes.SearchLocal(ctx, req.Partition, req.User, req.Spec)
	if err != nil {
		return partition.ReplyOf(nil, err), nil
	}
	b, err := json.Marshal(res)
	return partition.ReplyOf(b, err), nil
}
