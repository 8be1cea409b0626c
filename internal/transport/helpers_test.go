package transport

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// testHandler is a Handler whose behaviour each test sets through its
// function fields; Raft messages are recorded.
type testHandler struct {
	call func(ctx context.Context, from, method string, body []byte) ([]byte, error)
	snap func(ctx context.Context, from string, msg GroupMessage, data io.Reader) error

	mu     sync.Mutex
	raft   []GroupMessage
	froms  []string
	notify chan struct{}
}

// newTestHandler returns a handler that echoes calls and reads snapshots.
func newTestHandler() *testHandler {
	return &testHandler{notify: make(chan struct{}, 1)}
}

func (h *testHandler) HandleRaft(from string, msgs []GroupMessage) {
	h.mu.Lock()
	h.raft = append(h.raft, msgs...)
	for range msgs {
		h.froms = append(h.froms, from)
	}
	h.mu.Unlock()
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

func (h *testHandler) HandleSnapshot(ctx context.Context, from string, msg GroupMessage, data io.Reader) error {
	if h.snap != nil {
		return h.snap(ctx, from, msg, data)
	}
	_, err := io.Copy(io.Discard, data)
	return err
}

func (h *testHandler) HandleCall(ctx context.Context, from, method string, body []byte) ([]byte, error) {
	if h.call != nil {
		return h.call(ctx, from, method, body)
	}
	return body, nil
}

// received returns a copy of the Raft messages received so far.
func (h *testHandler) received() []GroupMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]GroupMessage(nil), h.raft...)
}

// count returns the number of Raft messages received so far.
func (h *testHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.raft)
}

// testTiming shortens every interval so failure paths run quickly.
func testTiming() timing {
	tm := defaultTiming()
	tm.dial = 2 * time.Second
	tm.keepalive = 100 * time.Millisecond
	tm.idleRead = 2 * time.Second
	tm.backoffMin = 5 * time.Millisecond
	tm.backoffMax = 50 * time.Millisecond
	tm.snapChunk = 64 << 10
	return tm
}

// node describes a test transport.
type node struct {
	id, cluster, addr string
}

// mustNew starts a transport for n with handler h, closed at test end.
func mustNew(t testing.TB, n node, h Handler, opts ...func(*Config)) *Transport {
	t.Helper()
	if n.addr == "" {
		n.addr = "127.0.0.1:0"
	}
	cluster := n.cluster
	cfg := Config{ListenAddr: n.addr, NodeID: n.id, ClusterID: func() string { return cluster }}
	for _, o := range opts {
		o(&cfg)
	}
	tr, err := newTransport(cfg, h, testTiming())
	if err != nil {
		t.Fatalf("new transport %s: %v", n.id, err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("close %s: %v", n.id, err)
		}
	})
	return tr
}

// mustPair starts two transports in cluster "c1".
func mustPair(t testing.TB) (a, b *Transport, ha, hb *testHandler) {
	t.Helper()
	ha, hb = newTestHandler(), newTestHandler()
	a = mustNew(t, node{id: "a", cluster: "c1"}, ha)
	b = mustNew(t, node{id: "b", cluster: "c1"}, hb)
	return a, b, ha, hb
}

// mustCall calls method on addr and fails the test on error.
func mustCall(t testing.TB, tr *Transport, addr, method string, body []byte) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := tr.Call(ctx, addr, method, body)
	if err != nil {
		t.Fatalf("call %s on %s: %v", method, addr, err)
	}
	return resp
}

// callErr calls addr with a short timeout and returns the error.
func callErr(tr *Transport, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := tr.Call(ctx, addr, "echo", []byte("x"))
	return err
}

// mustErrorIs fails unless errors.Is(err, target).
func mustErrorIs(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
}

// appMsg returns a small MsgApp carrying one entry.
func appMsg(index uint64, data []byte) raftpb.Message {
	return raftpb.Message{
		Type: raftpb.MsgApp, To: 2, From: 1, Term: 3, Index: index, LogTerm: 3, Commit: index,
		Entries: []raftpb.Entry{{Term: 3, Index: index + 1, Type: raftpb.EntryNormal, Data: data}},
	}
}

// deadAddr returns the address of a listener that has been closed, so
// dialing it fails.
func deadAddr(t testing.TB) string {
	t.Helper()
	tr := mustNew(t, node{id: "dead", cluster: "c1"}, newTestHandler())
	addr := tr.Addr()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
