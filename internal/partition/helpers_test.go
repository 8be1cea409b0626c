package partition

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
	"github.com/parley-chat/parley/internal/transport"
)

// pairApplier applies every command of the test groups by adding one to
// the counter under both "a" and "b", in one Apply: every committed state
// has a == b.
type pairApplier struct{}

func (pairApplier) Apply(w state.Writer, _ state.Meta, _ []byte) ([]byte, error) {
	var n uint64
	if v, ok, err := w.Get([]byte("a")); err != nil {
		return nil, err
	} else if ok {
		n = binary.BigEndian.Uint64(v)
	}
	v := binary.BigEndian.AppendUint64(nil, n+1)
	if err := w.Set([]byte("a"), v); err != nil {
		return nil, err
	}
	return v, w.Set([]byte("b"), v)
}

// noSender drops Raft traffic: the test engines run single-replica groups.
type noSender struct{}

func (noSender) SendRaft(string, []transport.GroupMessage) {}
func (noSender) SendSnapshot(context.Context, string, transport.GroupMessage, func(io.Writer) error) error {
	return fmt.Errorf("no snapshots in this test")
}

// testDir is a map of one group with one replica: replica 1 of group 1 on
// node "n1".
type testDir struct{}

func (testDir) Partitions() int { return 1 }
func (testDir) AddrOf(replica uint64) (string, bool) {
	return "n1", replica == 1
}
func (testDir) ReplicaAddrs(g uint64) []string {
	if g == 1 {
		return []string{"n1"}
	}
	return nil
}

// testNode is one node's engine, store and request path.
type testNode struct {
	deps   Deps
	router *Router
	server *Server
}

// newTestNode starts a node named self; with group, it holds the only
// replica of group 1 and leads it. caller reaches the other nodes.
func newTestNode(t *testing.T, self string, group bool, caller Caller) *testNode {
	t.Helper()
	return newTestNodeWith(t, self, group, caller, pairApplier{}, nil)
}

// newTestNodeWith is newTestNode applying commands with app and reporting
// applied rounds to onApplied (nil: nobody).
func newTestNodeWith(t *testing.T, self string, group bool, caller Caller, app state.Applier, onApplied func(group, applied uint64)) *testNode {
	t.Helper()
	db, err := storage.Open("db", storage.Options{FS: vfs.NewMem(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := multiraft.DefaultConfig()
	cfg.DB, cfg.Sender, cfg.Directory = db, noSender{}, testDir{}
	cfg.Applier = func(uint64) state.Applier { return app }
	cfg.OnApplied = onApplied
	cfg.TickInterval, cfg.ElectionTicks = 5*time.Millisecond, 10
	e, err := multiraft.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	n := &testNode{deps: Deps{Engine: e, DB: db, Directory: testDir{}, Caller: caller, Self: self}}
	n.router, n.server = NewRouter(n.deps), NewServer(n.deps)
	t.Cleanup(func() {
		e.Close()
		n.server.Close()
		_ = db.Close()
	})
	if group {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.OpenGroup(ctx, 1, 1, []uint64{1}); err != nil {
			t.Fatal(err)
		}
		for {
			if _, local := e.Leader(1); local {
				break
			}
			_ = e.Campaign(ctx, 1)
			if ctx.Err() != nil {
				t.Fatal("the single replica did not become leader")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return n
}

// loopback is a Caller that hands calls to the Server of node "n1" the way
// the node's call table does (without its guards), through the encodings
// of the wire.
type loopback struct {
	server *Server
	calls  map[string]int // by method; not safe for concurrent use
	// unknown lists methods n1 answers as a build without them does: with
	// a remote error; starting, those it answers as such a build does
	// while it starts: a JSON "node starting".
	unknown, starting map[string]bool
}

func (l *loopback) Call(ctx context.Context, addr, method string, body []byte) ([]byte, error) {
	if addr != "n1" || l.server == nil {
		return nil, fmt.Errorf("no node %s: %w", addr, transport.ErrUnreachable)
	}
	if l.calls != nil {
		l.calls[method]++
	}
	if l.unknown[method] {
		return nil, &transport.RemoteError{Message: fmt.Sprintf("unknown method %q", method)}
	}
	if l.starting[method] {
		return json.Marshal(Reply{Code: errs.Unavailable, Message: "node starting"})
	}
	var rep Reply
	switch method {
	case MethodPropose:
		var req ProposeRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, err
		}
		rep = l.server.Propose(ctx, req)
	case MethodProposeBin:
		req, err := DecodeProposeRequest(body)
		if err != nil {
			return nil, err
		}
		rep = l.server.Propose(ctx, req)
	case MethodGet, MethodScan:
		var req ReadRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, err
		}
		rep = l.server.Read(ctx, method, req)
	case MethodGetBin, MethodScanBin:
		req, err := DecodeReadRequest(body)
		if err != nil {
			return nil, err
		}
		kind := MethodGet
		if method == MethodScanBin {
			kind = MethodScan
		}
		rep = l.server.Read(ctx, kind, req)
	case MethodRelease:
		var req ReleaseRequest
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, err
		}
		rep = l.server.Release(req)
	default:
		return nil, fmt.Errorf("unknown method %q", method)
	}
	return EncodeReply(method, rep)
}

// readPair reads "a" and "b" with two calls of r, as a multi-read function
// does.
func readPair(r state.Reader) (a, b uint64, err error) {
	for i, k := range []string{"a", "b"} {
		v, ok, err := r.Get([]byte(k))
		if err != nil {
			return 0, 0, err
		}
		var n uint64
		if ok {
			n = binary.BigEndian.Uint64(v)
		}
		if i == 0 {
			a = n
		} else {
			b = n
		}
	}
	return a, b, nil
}
