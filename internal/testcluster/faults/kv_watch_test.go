package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// seenChange is one event a watcher received.
type seenChange struct {
	partition, revision uint64
	typ, key, value     string
}

// resumingWatcher watches a prefix through one node after another: when
// its node dies it resumes on the next live node from the last token.
type resumingWatcher struct {
	c      *testcluster.Cluster
	prefix string

	mu       sync.Mutex
	token    string
	seen     []seenChange
	resumes  int
	lastNode int
}

// run watches until ctx ends. A history_compacted or any other refusal
// fails the test.
func (w *resumingWatcher) run(t *testing.T, ctx context.Context, start string) {
	w.mu.Lock()
	w.token = start
	w.mu.Unlock()
	for attempt := 0; ctx.Err() == nil; attempt++ {
		i := attempt % w.c.Len()
		if w.c.Node(i) == nil {
			continue
		}
		err := w.connect(ctx, i)
		if ce, ok := errors.AsType[*client.Error](err); ok && !ce.Retryable {
			t.Errorf("watch through n%d refused: %v", i+1, err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (w *resumingWatcher) connect(ctx context.Context, i int) error {
	w.mu.Lock()
	after := w.token
	w.mu.Unlock()
	kw, err := w.c.Client(i).KVWatch(ctx, client.WatchOptions{Prefix: w.prefix, After: after})
	if err != nil {
		return err
	}
	defer kw.Close()
	w.mu.Lock()
	w.resumes++
	w.lastNode = i
	w.mu.Unlock()
	for {
		ch, err := kw.Next()
		if err != nil {
			return err
		}
		w.mu.Lock()
		for _, e := range ch.Events {
			w.seen = append(w.seen, seenChange{ch.Partition, ch.Revision, e.Type, e.Key, string(e.Value)})
		}
		w.token = ch.Token
		w.mu.Unlock()
	}
}

func (w *resumingWatcher) snapshot() ([]seenChange, string, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seenChange(nil), w.seen...), w.token, w.lastNode
}

// A watcher of a prefix that reconnects across node kills sees every
// revision of the prefix once, in order per partition: exactly what a
// watch from the same start read afterwards in one go sees, with every
// acknowledged put among it.
func TestKVWatch_ResumesAcrossNodeKills(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first, err := c.Client(0).KVWatch(ctx, client.WatchOptions{Prefix: "w/"})
	if err != nil {
		t.Fatal(err)
	}
	start := first.Token()
	_ = first.Close()

	w := &resumingWatcher{c: c, prefix: "w/"}
	wctx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.run(t, wctx, start) })

	// The writer: 400 puts and deletes over 40 keys (and puts outside the
	// prefix), each retried with its idempotency key until acknowledged.
	acked := map[string]bool{}
	var writerDone sync.WaitGroup
	writerDone.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		for n := range 400 {
			key := fmt.Sprintf("w/%d", rng.IntN(40))
			if n%7 == 0 {
				key = fmt.Sprintf("other/%d", n)
			}
			value := fmt.Sprintf("v%d", n)
			wctx := client.WithIdempotencyKey(ctx, fmt.Sprintf("write-%d", n))
			del := n%11 == 5
			poll.Until(t, time.Minute, "write "+key, func() error {
				api := c.Client(rng.IntN(c.Len()))
				cctx, cancel := context.WithTimeout(wctx, 3*time.Second)
				defer cancel()
				if del {
					err := api.KVDelete(cctx, key, client.DeleteOptions{})
					if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 404 {
						return nil
					}
					return err
				}
				_, err := api.KVPut(cctx, key, []byte(value), client.PutOptions{})
				return err
			})
			if key[:2] == "w/" && !del {
				acked[value] = true
			}
		}
	})

	rng := rand.New(rand.NewPCG(3, 4))
	for range 5 {
		_, _, node := w.snapshot()
		victim := node
		if rng.IntN(3) == 0 {
			victim = rng.IntN(c.Len())
		}
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		c.Kill(victim)
		time.Sleep(time.Duration(200+rng.IntN(300)) * time.Millisecond)
		c.Restart(victim)
	}
	writerDone.Wait()

	// Read the whole prefix history in one watch from the start, up to the
	// partitions' current revisions, and wait for the watcher to get there.
	want := readAll(t, ctx, c, start)
	poll.Until(t, time.Minute, "the watcher to catch up", func() error {
		seen, _, _ := w.snapshot()
		if len(seen) < len(want) {
			return fmt.Errorf("%d of %d events: %w", len(seen), len(want), testcluster.ErrNotYet)
		}
		return nil
	})
	stopWatch()
	wg.Wait()
	seen, _, _ := w.snapshot()
	if err := sameHistory(seen, want); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, s := range seen {
		if s.typ == "put" {
			got[s.value] = true
		}
	}
	for v := range acked {
		if !got[v] {
			t.Errorf("acknowledged put %s never reached the watcher", v)
		}
	}
	t.Logf("%d events over %d connections, %d acknowledged puts", len(seen), w.resumes, len(acked))
}

// readAll reads every event of the prefix w/ after start through one
// fresh watch, until it has been quiet for 2 s (the writer is done).
func readAll(t *testing.T, ctx context.Context, c *testcluster.Cluster, start string) []seenChange {
	t.Helper()
	var out []seenChange
	poll.Until(t, time.Minute, "a full read of the prefix", func() error {
		out = nil
		api := c.Client(0)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		kw, err := api.KVWatch(wctx, client.WatchOptions{Prefix: "w/", After: start})
		if err != nil {
			return err
		}
		defer kw.Close()
		quiet := time.AfterFunc(2*time.Second, cancel)
		for {
			ch, err := kw.Next()
			if err != nil {
				if wctx.Err() != nil {
					return nil // quiet for 2 s: everything was read
				}
				return err
			}
			quiet.Reset(2 * time.Second)
			for _, e := range ch.Events {
				out = append(out, seenChange{ch.Partition, ch.Revision, e.Type, e.Key, string(e.Value)})
			}
		}
	})
	return out
}

// sameHistory checks that seen is want: per partition the same events in
// the same order, revisions increasing, nothing twice, nothing missing.
func sameHistory(seen, want []seenChange) error {
	byPart := func(cs []seenChange) map[uint64][]seenChange {
		m := map[uint64][]seenChange{}
		for _, c := range cs {
			m[c.partition] = append(m[c.partition], c)
		}
		return m
	}
	s, w := byPart(seen), byPart(want)
	for p, ws := range w {
		ss := s[p]
		if len(ss) != len(ws) {
			return fmt.Errorf("partition %d: the watcher saw %d events, the partition has %d", p, len(ss), len(ws))
		}
		for i := range ws {
			if ss[i] != ws[i] {
				return fmt.Errorf("partition %d event %d: watcher saw %+v, the partition has %+v", p, i, ss[i], ws[i])
			}
			if i > 0 && ss[i].revision < ss[i-1].revision {
				return fmt.Errorf("partition %d: revision %d after %d", p, ss[i].revision, ss[i-1].revision)
			}
		}
	}
	if len(s) != len(w) {
		return fmt.Errorf("the watcher saw partitions %d, the history has %d", len(s), len(w))
	}
	return nil
}
