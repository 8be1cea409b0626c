package node

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/parley-chat/parley/internal/partition"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/api"
	"github.com/parley-chat/parley/internal/link"
	"github.com/parley-chat/parley/internal/metrics"
	"github.com/parley-chat/parley/internal/placement"
)

var _ api.ClusterOps = (*Node)(nil)

// opsBudget bounds a fan-out to every node.
const opsBudget = 2 * time.Second

// opsState is the node's operator figures: request counts, replica lag and
// the link cache's counters. Its zero value is ready; the engine feeds lag
// from the start, the HTTP layer the rest once it exists.
type opsState struct {
	requests requestCounter
	lag      lagRecorder
	phases   phaseRecorder          // proposal phase timings (perf.go)
	links    func() link.CacheStats // nil until the services exist
	mu       sync.Mutex             // guards links
}

// wireOps connects the operator figures to the HTTP layer's services and
// metrics (called once from startHTTP).
func (n *Node) wireOps(s *services) {
	n.ops.mu.Lock()
	n.ops.links = s.links.CacheStats
	n.ops.mu.Unlock()
	n.ops.lag.setHistogram(metrics.NewApplyLag(n.metrics))
	n.ops.phases.hist.Store(metrics.NewProposalPhases(n.metrics))
	metrics.RegisterCache(n.metrics, "link", func() metrics.CacheCounts {
		st := s.links.CacheStats()
		return metrics.CacheCounts{Hits: st.Hits, Misses: st.Misses}
	})
}

// observeHTTP counts one answered request and hands it to the metrics.
func (n *Node) observeHTTP(route string, status int, d time.Duration) {
	n.ops.requests.add(time.Now(), status >= 500)
	n.metrics.ObserveHTTP(route, status, d)
}

// requestCounter counts requests, ok and failed, and keeps per-second
// counts of the last rateWindow seconds for the recent rate. It takes no
// lock: every request a node serves adds to it, from every core.
type requestCounter struct {
	ok, failed atomic.Uint64
	// secs holds, by unix second mod len, the second a slot counts (the
	// bits above secondShift) and its count (the bits below).
	secs  [rateWindow + 1]atomic.Uint64
	first atomic.Int64 // the first request, in unix nanoseconds; 0: none yet
}

const (
	rateWindow = 10
	// secondShift leaves a second's count 2^24 (16.7 million) requests,
	// and the second 40 bits.
	secondShift = 24
	countMask   = 1<<secondShift - 1
)

func (c *requestCounter) add(now time.Time, failed bool) {
	if failed {
		c.failed.Add(1)
	} else {
		c.ok.Add(1)
	}
	if c.first.Load() == 0 {
		c.first.CompareAndSwap(0, now.UnixNano())
	}
	sec := uint64(now.Unix())
	slot := &c.secs[sec%uint64(len(c.secs))]
	for {
		v := slot.Load()
		next := sec<<secondShift | 1 // the slot's first request of sec
		switch held := v >> secondShift; {
		case held == sec && v&countMask == countMask:
			return // a full second: the rate reads as at least 16.7 million/s
		case held == sec:
			next = v + 1
		case held > sec:
			return // a request read the clock a window ago: the slot moved on
		}
		if slot.CompareAndSwap(v, next) {
			return
		}
	}
}

// figures returns the totals and the request rate over the last
// rateWindow seconds, the current one included (over the time since the
// first request when that is shorter, but at least a second).
func (c *requestCounter) figures(now time.Time) (ok, failed uint64, perSec float64) {
	sec := uint64(now.Unix())
	var sum uint64
	for i := range c.secs {
		v := c.secs[i].Load()
		if s := v >> secondShift; s <= sec && s+rateWindow > sec {
			sum += v & countMask
		}
	}
	span := float64(rateWindow)
	if first := c.first.Load(); first != 0 {
		span = min(span, max(now.Sub(time.Unix(0, first)).Seconds(), 1))
	}
	return c.ok.Load(), c.failed.Load(), float64(sum) / span
}

// localStats is this node's answer to the stats call.
func (n *Node) localStats() api.NodeStats {
	ok, failed, rate := n.ops.requests.figures(time.Now())
	st := api.NodeStats{Node: n.cfg.ID, State: "alive", RequestsOK: ok, RequestsFailed: failed, RequestsPerSec: rate}
	n.ops.mu.Lock()
	links := n.ops.links
	n.ops.mu.Unlock()
	if links != nil {
		cs := links()
		st.CacheHits, st.CacheMisses = cs.Hits, cs.Misses
	}
	st.StreamSubscribers = n.feeds.Hub().Stats().Subscribers
	return st
}

// ClusterStats implements api.ClusterOps: every node's figures, gathered
// over internal calls (nodes that do not answer in time show as
// unreachable).
func (n *Node) ClusterStats(ctx context.Context) (*api.StatsReport, error) {
	m := n.Map()
	rep := &api.StatsReport{Nodes: []api.NodeStats{}}
	if m == nil {
		return rep, nil
	}
	out := make([]api.NodeStats, len(m.Nodes))
	n.eachNode(ctx, m, func(i int, nd placement.Node) {
		out[i] = api.NodeStats{Node: nd.ID, State: "unreachable"}
		var st api.NodeStats
		if err := n.ask(ctx, nd, methodStats, nil, &st); err == nil {
			out[i] = st
		}
	})
	rep.Nodes = out
	return rep, nil
}

// eachNode runs fn for every node of m concurrently, within opsBudget.
func (n *Node) eachNode(ctx context.Context, m *placement.Map, fn func(i int, nd placement.Node)) {
	ctx, cancel := context.WithTimeout(ctx, opsBudget)
	defer cancel()
	var wg sync.WaitGroup
	for i, nd := range m.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i, nd)
		}()
	}
	wg.Wait()
}

// ask runs an operator call on node nd (directly when it is this node) and
// decodes its result into out.
func (n *Node) ask(ctx context.Context, nd placement.Node, method string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var res []byte
	if nd.ID == n.cfg.ID {
		v, err := n.opsLocal(ctx, method, body)
		if err != nil {
			return err
		}
		if res, err = json.Marshal(v); err != nil {
			return err
		}
	} else {
		var rep partition.Reply
		if err := n.call(ctx, nd.Addr, method, body, &rep); err != nil {
			return err
		}
		if err := rep.Err(0); err != nil {
			return err
		}
		res = rep.Result
	}
	return json.Unmarshal(res, out)
}

// callOps answers an operator call (stats, lag, checksum) from this node.
func (n *Node) callOps(method string) callHandler {
	return func(ctx context.Context, _ string, body []byte) (partition.Reply, error) {
		v, err := n.opsLocal(ctx, method, body)
		if err != nil {
			return partition.Reply{}, err // a malformed request
		}
		res, err := json.Marshal(v)
		return partition.Reply{Result: res}, err
	}
}

// opsLocal runs one operator call on this node; it fails only on a
// malformed request.
func (n *Node) opsLocal(ctx context.Context, method string, body []byte) (any, error) {
	switch method {
	case methodStats:
		return n.localStats(), nil
	case methodLag:
		return n.localLag(time.Now()), nil
	case methodChecksum:
		var req checksumRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, fmt.Errorf("bad checksum request: %w", err)
		}
		return n.localChecksum(ctx, req), nil
	}
	return nil, fmt.Errorf("unknown method %q", method)
}
