package multiraft

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/parley-chat/parley/internal/poll"
)

// A follower that receives appends but stops answering them (a stuck node,
// a one-way cut) is sent at most Config.MaxInflightBytes of entries, plus
// one message, while the group goes on committing with the other follower:
// the leader queues no more for it, whatever size the entries are.
func TestEngine_AppendsInFlightToASilentFollowerAreBounded(t *testing.T) {
	const perMsg, inflight, cmdSize, cmds = 64 << 10, 512 << 10, 16 << 10, 160
	tn := newTestNet(t, 3, 0, func(c *Config) { c.MaxSizePerMsg, c.MaxInflightBytes = perMsg, inflight })
	tn.propose([]byte("warm"), 1)
	lead := tn.nameOf(tn.leader())
	silent := tn.follower()
	silentID, _ := strconv.ParseUint(strings.TrimPrefix(silent, "n"), 10, 64)
	// The follower to be silenced has acknowledged the leader's log: the
	// leader replicates to it (a follower still probed gets one append
	// per heartbeat answered, and it will answer none).
	poll.Until(t, 5*time.Second, "the follower acknowledges the leader's log", func() bool {
		st, ok, err := tn.net.engines[lead].GroupStatus(context.Background(), 1)
		return err == nil && ok && st.Progress[silentID].Match >= st.Commit
	})
	var sent atomic.Int64
	tn.net.mu.Lock()
	tn.net.filter = func(from, to string, m *raftpb.Message) bool {
		if from == silent {
			return false // it hears everything and answers nothing
		}
		if from == lead && to == silent && m.Type == raftpb.MsgApp {
			for _, e := range m.Entries {
				sent.Add(int64(len(e.Data)))
			}
		}
		return true
	}
	tn.net.mu.Unlock()

	// 2.5 MiB of commands, committed by the leader and the other follower.
	e := tn.net.engines[lead]
	var wg sync.WaitGroup
	errc := make(chan error, cmds)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < cmds; i += 8 {
				cmd := make([]byte, cmdSize)
				cmd[0] = 1
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := e.Propose(ctx, 1, fmt.Appendf(nil, "big-%d", i), cmd)
				cancel()
				if err != nil {
					errc <- fmt.Errorf("proposal %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if got, limit := sent.Load(), int64(inflight+perMsg); got > limit {
		t.Fatalf("the leader sent %d bytes of entries to a follower that answered none; want at most %d (MaxInflightBytes + one message)", got, limit)
	}
	if got := sent.Load(); got < inflight/2 {
		t.Fatalf("the leader sent only %d bytes of entries to the silent follower: the test did not fill its window", got)
	}
}
