package partition

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/errs"
	"github.com/parley-chat/parley/internal/multiraft"
	"github.com/parley-chat/parley/internal/state"
)

// Every read function sees one snapshot: "a" and "b", which every command
// writes together, never differ, while commands apply as fast as they can —
// read on the replica's node (one local snapshot) and from a node without a
// replica (one remote snapshot across the get calls, by a read session), in
// two Gets and in a Get then a Scan.
func TestRouter_Read_OneSnapshotWhileApplying(t *testing.T) {
	lb := &loopback{}
	n1 := newTestNode(t, "n1", true, lb)
	lb.server = n1.server
	n2 := newTestNode(t, "n2", false, lb)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var writers sync.WaitGroup
	for range 4 {
		writers.Go(func() {
			for ctx.Err() == nil {
				_, _ = n1.router.Propose(ctx, 1, "", []byte{1})
			}
		})
	}
	defer writers.Wait()
	defer cancel()

	readers := map[string]func(state.Reader) (uint64, uint64, error){
		"get get": readPair,
		"get scan": func(r state.Reader) (a, b uint64, err error) {
			v, _, err := r.Get([]byte("a"))
			if err != nil || len(v) != 8 {
				return 0, 0, err
			}
			a = binary.BigEndian.Uint64(v)
			err = r.Scan([]byte("b"), []byte("c"), func(_, v []byte) bool {
				b = binary.BigEndian.Uint64(v)
				return false
			})
			return a, b, err
		},
	}
	for _, tc := range []struct {
		name  string
		node  *testNode
		stale bool
	}{
		{"local linearizable", n1, false},
		{"local stale", n1, true},
		{"remote linearizable", n2, false},
		{"remote stale", n2, true},
	} {
		for rname, read := range readers {
			t.Run(tc.name+" "+rname, func(t *testing.T) {
				var first, last uint64
				deadline := time.Now().Add(300 * time.Millisecond)
				for i := 0; i < 50 || time.Now().Before(deadline); i++ {
					var a, b uint64
					if _, err := tc.node.router.Read(context.Background(), 1, tc.stale, func(r state.Reader) error {
						var err error
						a, b, err = read(r)
						return err
					}); err != nil {
						t.Fatal(err)
					}
					if a != b {
						t.Fatalf("read %d saw a = %d, b = %d: two moments in one read", i, a, b)
					}
					if i == 0 {
						first = a
					}
					last = a
				}
				if last == first {
					t.Fatalf("the counter stayed at %d: no apply ran during the reads", first)
				}
			})
		}
	}
	if got := n1.server.sessions.count(); got != 0 {
		t.Errorf("%d read sessions left open after the reads", got)
	}
}

// A remote read of one call holds nothing on the replica node; a read of
// several calls holds one session and releases it at the end.
func TestRouter_Read_RemoteSessions(t *testing.T) {
	lb := &loopback{calls: map[string]int{}}
	n1 := newTestNode(t, "n1", true, lb)
	lb.server = n1.server
	n2 := newTestNode(t, "n2", false, lb)
	ctx := context.Background()
	if _, err := n1.router.Propose(ctx, 1, "", []byte{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.router.Read(ctx, 1, false, func(r state.Reader) error {
		_, _, err := r.Get([]byte("a"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if lb.calls[MethodGetBin] != 1 || lb.calls[MethodRelease] != 0 {
		t.Fatalf("one get: calls %v", lb.calls)
	}
	clear(lb.calls)
	var held int
	if _, err := n2.router.Read(ctx, 1, false, func(r state.Reader) error {
		_, _, err := readPair(r)
		held = n1.server.sessions.count()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if held != 1 || lb.calls[MethodGetBin] != 2 || lb.calls[MethodRelease] != 1 || n1.server.sessions.count() != 0 {
		t.Fatalf("two gets: %d sessions held during the read, %d after, calls %v", held, n1.server.sessions.count(), lb.calls)
	}
}

// The replica node refuses a second call at another applied index (the
// reader starts again holding a session), and a session that is gone.
func TestServer_Read_Refusals(t *testing.T) {
	n1 := newTestNode(t, "n1", true, nil)
	ctx := context.Background()
	if _, err := n1.router.Propose(ctx, 1, "", []byte{1}); err != nil {
		t.Fatal(err)
	}
	first := n1.server.Read(ctx, MethodGet, ReadRequest{Group: 1, Key: []byte("a"), Linearizable: true})
	if first.Err(1) != nil || first.Applied == 0 || first.Session != 0 {
		t.Fatalf("first call = %+v", first)
	}
	if _, err := n1.router.Propose(ctx, 1, "", []byte{1}); err != nil {
		t.Fatal(err)
	}
	moved := n1.server.Read(ctx, MethodGet, ReadRequest{Group: 1, Key: []byte("b"), Hold: true, Same: true, At: first.Applied})
	if err := moved.Err(1); !errors.Is(err, errReadMoved) || !retryable(err) {
		t.Fatalf("a second call after an apply = %+v (%v), want moved", moved, err)
	}
	gone := n1.server.Read(ctx, MethodGet, ReadRequest{Group: 1, Key: []byte("a"), Session: 12345})
	if err := gone.Err(1); !errors.Is(err, errSessionGone) || !retryable(err) {
		t.Fatalf("an unknown session = %+v (%v)", gone, err)
	}
	if n1.server.sessions.count() != 0 {
		t.Fatal("a refused call left a session")
	}
}

// "No replica here" is the engine's error, on the wire too, and the router
// retries it; a user's NotFound it never retries.
func TestReply_NoReplicaIsNotNotFound(t *testing.T) {
	n2 := newTestNode(t, "n2", false, nil)
	rep := n2.server.Read(context.Background(), MethodGet, ReadRequest{Group: 1, Key: []byte("a")})
	if rep.Code != "" || rep.Engine != engineNoReplica {
		t.Fatalf("a read where no replica is = %+v", rep)
	}
	err := rep.Err(1)
	if !multiraft.IsNoReplica(err) || errs.Is(err, errs.NotFound) || !retryable(err) {
		t.Fatalf("its error %v: no-replica %v, retryable %v", err, multiraft.IsNoReplica(err), retryable(err))
	}
	prop := n2.server.Propose(context.Background(), ProposeRequest{Group: 1, ID: []byte("x"), Cmd: []byte{1}})
	if !multiraft.IsNoReplica(prop.Err(1)) {
		t.Fatalf("a proposal where no replica is = %+v", prop)
	}
	user := ReplyOf(nil, errs.New(errs.NotFound, "no key k"))
	if err := user.Err(1); !errs.Is(err, errs.NotFound) || retryable(err) || multiraft.IsNoReplica(err) {
		t.Fatalf("a user's not found = %v: retryable %v", err, retryable(err))
	}
	// A read function's own NotFound ends the read at once.
	n1 := newTestNode(t, "n1", true, nil)
	calls := 0
	_, err = n1.router.Read(context.Background(), 1, false, func(state.Reader) error {
		calls++
		return errs.New(errs.NotFound, "no room r")
	})
	if !errs.Is(err, errs.NotFound) || calls != 1 {
		t.Fatalf("Read = %v after %d calls of fn, want the NotFound after one", err, calls)
	}
}
