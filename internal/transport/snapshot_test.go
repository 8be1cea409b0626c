package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"
)

// snapMsg returns a MsgSnap for group 42.
func snapMsg() GroupMessage {
	return GroupMessage{Group: 42, Msg: raftpb.Message{
		Type: raftpb.MsgSnap, To: 2, From: 1, Term: 5,
		Snapshot: &raftpb.Snapshot{Metadata: raftpb.SnapshotMetadata{Index: 100, Term: 5,
			ConfState: raftpb.ConfState{Voters: []uint64{1, 2, 3}}}},
	}}
}

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// writeInPieces writes data in uneven pieces, as a storage iterator would.
func writeInPieces(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		for p, i := data, 1; len(p) > 0; i++ {
			n := min(len(p), 1000*i)
			if _, err := w.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		return nil
	}
}

func TestTransport_SendSnapshot(t *testing.T) {
	ctx := context.Background()
	t.Run("stream arrives intact", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		data := randomBytes(5 << 20)
		type got struct {
			from string
			msg  GroupMessage
			sum  [32]byte
			n    int
		}
		res := make(chan got, 1)
		hb.snap = func(_ context.Context, from string, msg GroupMessage, r io.Reader) error {
			all, err := io.ReadAll(r)
			res <- got{from, msg, sha256.Sum256(all), len(all)}
			return err
		}
		if err := a.SendSnapshot(ctx, b.Addr(), snapMsg(), writeInPieces(data)); err != nil {
			t.Fatal(err)
		}
		g := <-res
		if g.n != len(data) || g.sum != sha256.Sum256(data) {
			t.Fatalf("received %d bytes with a different hash, want %d", g.n, len(data))
		}
		mustEqualMessages(t, []GroupMessage{g.msg}, []GroupMessage{snapMsg()})
		if g.from != "a" {
			t.Fatalf("from %q", g.from)
		}
		if a.Stats().SnapshotsSent != 1 || b.Stats().SnapshotsReceived != 1 {
			t.Fatalf("stats %+v %+v", a.Stats(), b.Stats())
		}
	})
	t.Run("empty data", func(t *testing.T) {
		a, b, _, _ := mustPair(t)
		if err := a.SendSnapshot(ctx, b.Addr(), snapMsg(), func(io.Writer) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("receiver error after reading comes back", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		hb.snap = func(_ context.Context, _ string, _ GroupMessage, r io.Reader) error {
			if _, err := io.Copy(io.Discard, r); err != nil {
				return err
			}
			return errors.New("checksum mismatch")
		}
		mustRemoteError(t, a.SendSnapshot(ctx, b.Addr(), snapMsg(), writeInPieces(randomBytes(1<<20))), "checksum mismatch")
	})
	t.Run("receiver error before reading stops the sender", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		hb.snap = func(context.Context, string, GroupMessage, io.Reader) error {
			return errors.New("disk full")
		}
		big := bytes.Repeat([]byte("x"), 64<<10)
		endless := func(w io.Writer) error {
			for {
				if _, err := w.Write(big); err != nil {
					return err
				}
			}
		}
		mustRemoteError(t, a.SendSnapshot(ctx, b.Addr(), snapMsg(), endless), "disk full")
	})
	t.Run("sender data error reaches the receiver as a cut stream", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		recvErr := make(chan error, 1)
		hb.snap = func(_ context.Context, _ string, _ GroupMessage, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			recvErr <- err
			return err
		}
		boom := errors.New("iterator failed")
		err := a.SendSnapshot(ctx, b.Addr(), snapMsg(), func(w io.Writer) error {
			if _, err := w.Write(randomBytes(200 << 10)); err != nil {
				return err
			}
			return boom
		})
		mustErrorIs(t, err, boom)
		select {
		case err := <-recvErr:
			mustErrorIs(t, err, io.ErrUnexpectedEOF)
		case <-time.After(2 * time.Second):
			t.Fatal("receiver did not see the stream end")
		}
	})
	t.Run("cancel aborts", func(t *testing.T) {
		a, b, _, hb := mustPair(t)
		hb.snap = func(ctx context.Context, _ string, _ GroupMessage, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := a.SendSnapshot(cctx, b.Addr(), snapMsg(), func(w io.Writer) error {
			for {
				if _, err := w.Write(make([]byte, 32<<10)); err != nil {
					return err
				}
			}
		})
		mustErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("other cluster is refused", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler())
		b := mustNew(t, node{id: "b", cluster: "c2"}, newTestHandler())
		err := a.SendSnapshot(ctx, b.Addr(), snapMsg(), func(io.Writer) error { return nil })
		mustErrorIs(t, err, ErrClusterMismatch)
	})
	t.Run("unreachable peer", func(t *testing.T) {
		a := mustNew(t, node{id: "a", cluster: "c1"}, newTestHandler())
		err := a.SendSnapshot(ctx, deadAddr(t), snapMsg(), func(io.Writer) error { return nil })
		mustErrorIs(t, err, ErrUnreachable)
	})
}

// mustRemoteError fails unless err is a *RemoteError with message msg.
func mustRemoteError(t testing.TB, err error, msg string) {
	t.Helper()
	var re *RemoteError
	if !errors.As(err, &re) || re.Message != msg {
		t.Fatalf("got %v, want RemoteError %q", err, msg)
	}
}
