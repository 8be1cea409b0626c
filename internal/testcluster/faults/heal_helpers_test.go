package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/linearizable"
	"github.com/parley-chat/parley/internal/placement"
	"github.com/parley-chat/parley/internal/poll"
)

// kvLoad runs clients that put and get a small key space through whichever
// nodes are up, recording a history for the linearizability checker, every
// acknowledged version, latencies, and every error a client could not retry.
type kvLoad struct {
	t       *testing.T
	targets func() []*client.Client
	keys    int
	prefix  string // of the keys: each load starts from keys never written
	h       *linearizable.History
	stopc   chan struct{}
	wg      sync.WaitGroup

	mu        sync.Mutex
	acked     map[string]uint64
	ok, fails int
	fatal     []error // errors a client could not retry
	lat       []time.Duration
}

// startKVLoad starts clients workers on keys prefix0..prefix<keys-1>;
// targets returns the clients of the nodes that are up (it is called before
// every operation).
func startKVLoad(t *testing.T, prefix string, clients, keys int, targets func() []*client.Client) *kvLoad {
	l := &kvLoad{t: t, targets: targets, keys: keys, prefix: prefix, h: linearizable.NewHistory(),
		stopc: make(chan struct{}), acked: map[string]uint64{}}
	for cl := range clients {
		l.wg.Go(func() { l.worker(cl) })
	}
	return l
}

func (l *kvLoad) worker(cl int) {
	rng := rand.New(rand.NewPCG(uint64(cl), 11))
	for n := 0; ; n++ {
		select {
		case <-l.stopc:
			return
		default:
		}
		apis := l.targets()
		if len(apis) == 0 {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		api := apis[rng.IntN(len(apis))]
		key := fmt.Sprintf("%s%d", l.prefix, rng.IntN(l.keys))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		call, start := l.h.Now(), time.Now()
		var err error
		if rng.IntN(2) == 0 {
			in := linearizable.KVInput{Put: true, Key: key, Value: fmt.Sprintf("c%d-%d", cl, n)}
			var ver uint64
			ver, err = api.KVPut(ctx, key, []byte(in.Value), client.PutOptions{IdempotencyKey: in.Value})
			switch {
			case err != nil:
				// Even a refused connection may follow an attempt that
				// reached the server: net/http resends requests carrying an
				// Idempotency-Key on a fresh connection.
				l.h.Add(porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: linearizable.KVOutput{Unknown: true}, Return: linearizable.UnknownReturn})
			default:
				l.h.Add(porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: linearizable.KVOutput{Version: ver}, Return: l.h.Now()})
				l.mu.Lock()
				l.acked[key] = max(l.acked[key], ver)
				l.mu.Unlock()
			}
		} else {
			var v []byte
			var ver uint64
			v, ver, err = api.KVGet(ctx, key, client.GetOptions{})
			var ce *client.Error
			switch {
			case err == nil:
				l.h.Add(porcupine.Operation{ClientId: cl, Input: linearizable.KVInput{Key: key}, Call: call,
					Output: linearizable.KVOutput{Value: string(v), Version: ver, Found: true}, Return: l.h.Now()})
			case errors.As(err, &ce) && ce.Status == 404:
				err = nil
				l.h.Add(porcupine.Operation{ClientId: cl, Input: linearizable.KVInput{Key: key}, Call: call, Output: linearizable.KVOutput{}, Return: l.h.Now()})
			}
		}
		cancel()
		l.mu.Lock()
		if err == nil {
			l.ok++
			l.lat = append(l.lat, time.Since(start))
		} else {
			l.fails++
			if !retryable(err) {
				l.fatal = append(l.fatal, err)
			}
		}
		l.mu.Unlock()
	}
}

// acks returns how many operations succeeded so far.
func (l *kvLoad) acks() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok
}

// waitAcks waits until n more operations succeeded.
func (l *kvLoad) waitAcks(n int, within time.Duration) {
	l.t.Helper()
	target := l.acks() + n
	poll.Until(l.t, within, fmt.Sprintf("%d more successful operations", n), func() error {
		if got := l.acks(); got < target {
			return fmt.Errorf("%d of %d", got, target)
		}
		return nil
	})
}

// loadReport is what a load run measured.
type loadReport struct {
	ok, fails int
	p99       time.Duration
}

// stop ends the load, reads every key back through via, and checks that no
// acknowledged write was lost, that the history is linearizable and that
// no client saw an error it could not retry.
func (l *kvLoad) stop(via *client.Client) loadReport {
	t := l.t
	t.Helper()
	close(l.stopc)
	l.wg.Wait()
	for i := 0; i < l.keys; i++ {
		key := fmt.Sprintf("%s%d", l.prefix, i)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		call := l.h.Now()
		v, ver, err := via.KVGet(ctx, key, client.GetOptions{})
		cancel()
		out := linearizable.KVOutput{Value: string(v), Version: ver, Found: true}
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && ce.Status == 404:
			out = linearizable.KVOutput{}
		case err != nil:
			t.Fatalf("final read of %s: %v", key, err)
		}
		l.h.Add(porcupine.Operation{ClientId: -1, Input: linearizable.KVInput{Key: key}, Call: call, Output: out, Return: l.h.Now()})
		if ver < l.acked[key] {
			t.Errorf("%s: version %d, but version %d was acknowledged", key, ver, l.acked[key])
		}
	}
	if len(l.fatal) > 0 {
		t.Errorf("%d errors a client could not retry, first: %v", len(l.fatal), l.fatal[0])
	}
	path := t.TempDir() + "/history.html"
	if res := l.h.Check(2*time.Minute, path); res != porcupine.Ok {
		t.Logf("first key not linearizable:\n%s", linearizable.FirstIllegal(l.h.Ops()))
		t.Fatalf("history is not linearizable (%s); visualization in %s", res, path)
	}
	r := loadReport{ok: l.ok, fails: l.fails}
	if len(l.lat) > 0 {
		sort.Slice(l.lat, func(i, j int) bool { return l.lat[i] < l.lat[j] })
		r.p99 = l.lat[len(l.lat)*99/100]
	}
	t.Logf("load: %d operations ok, %d failed (all retryable), p99 %v; history linearizable", r.ok, r.fails, r.p99)
	return r
}

// placedOn checks that every partition has rf voters and no other replica
// (no move in flight), the metadata
// group min(3, len(nodes)) voters, all on the given nodes, and that no
// partition replica is anywhere else.
func placedOn(m *placement.Map, rf int, nodes []string) error {
	if m == nil {
		return errors.New("no map")
	}
	for _, g := range m.Groups {
		voters := 0
		for _, r := range g.Replicas {
			if !slices.Contains(nodes, r.Node) && (g.ID != placement.MetaGroup || r.Role == placement.RoleVoter) {
				return fmt.Errorf("group %d keeps replica %d on %s", g.ID, r.ID, r.Node)
			}
			if r.Role == placement.RoleVoter {
				voters++
			}
		}
		want := min(rf, len(nodes))
		if g.ID == placement.MetaGroup {
			want = min(m.MetaVoters, len(nodes))
		}
		if voters != want {
			return fmt.Errorf("group %d has %d voters, want %d", g.ID, voters, want)
		}
		if g.ID != placement.MetaGroup && len(g.Replicas) != want {
			return fmt.Errorf("group %d has %d replicas, want %d (a move is in flight)", g.ID, len(g.Replicas), want)
		}
	}
	return nil
}

// replicasBalanced checks that the nodes hold partition replicas within one
// of each other.
func replicasBalanced(m *placement.Map, nodes []string) error {
	counts := map[string]int{}
	for _, g := range m.Groups[1:] {
		for _, r := range g.Replicas {
			counts[r.Node]++
		}
	}
	lo, hi := 1<<30, 0
	for _, n := range nodes {
		lo, hi = min(lo, counts[n]), max(hi, counts[n])
	}
	if hi-lo > 1 {
		return fmt.Errorf("partition replicas per node %v", counts)
	}
	return nil
}
