package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/testcluster"
)

// kvInput and kvOutput describe one operation of the history.
type kvInput struct {
	put   bool
	key   string
	value string
}

type kvOutput struct {
	value   string
	version uint64
	found   bool
	unknown bool // a put whose outcome the client never learned
}

type kvState struct {
	value   string
	version uint64
	found   bool
}

// kvModel is the sequential specification of one key: a put raises the
// version by one; a get sees the last put.
var kvModel = porcupine.Model{
	Partition: partitionBy(func(in any) string { return in.(kvInput).key }),
	Init:      func() any { return kvState{} },
	Step: func(s, in, out any) (bool, any) {
		st, i, o := s.(kvState), in.(kvInput), out.(kvOutput)
		if i.put {
			next := kvState{value: i.value, version: st.version + 1, found: true}
			return o.unknown || o.version == next.version, next
		}
		return o.found == st.found && (!o.found || (o.value == st.value && o.version == st.version)), st
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(kvInput), out.(kvOutput)
		if i.put {
			return fmt.Sprintf("put(%s,%s) -> v%d unknown=%v", i.key, i.value, o.version, o.unknown)
		}
		return fmt.Sprintf("get(%s) -> %q v%d found=%v", i.key, o.value, o.version, o.found)
	},
}

// partitionBy returns a porcupine Partition function that checks the
// operations of each key (as keyOf reads it from the input) apart.
func partitionBy(keyOf func(in any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := keyOf(op.Input)
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, ops := range byKey {
			out = append(out, ops)
		}
		return out
	}
}

// history records operations from many clients.
type history struct {
	mu    sync.Mutex
	ops   []porcupine.Operation
	start time.Time
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// chaosKills is how many leaders the linearizability test kills: 20, 200
// with -tags chaos, or PARLEY_CHAOS_KILLS.
func chaosKills() int {
	if s := os.Getenv("PARLEY_CHAOS_KILLS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return defaultChaosKills
}

// Twenty clients put and get 100 keys through random nodes while partition
// leaders are killed and restarted: the history must be linearizable
// (porcupine) and no acknowledged put may be lost.
func TestLinearizability_KVUnderLeaderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const nodes, clients, keys = 3, 20, 100
	c := testcluster.New(t, testcluster.Options{Nodes: nodes, Partitions: 8})
	h := &history{start: time.Now()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]uint64{} // highest acknowledged version per key

	apis := make([]*client.Client, nodes)
	for i := range apis {
		apis[i] = c.Client(i)
	}
	for cl := 0; cl < clients; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cl), 7))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k%d", rng.IntN(keys))
				api := apis[rng.IntN(nodes)]
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				call := h.now()
				if rng.IntN(2) == 0 {
					in := kvInput{put: true, key: key, value: fmt.Sprintf("c%d-%d", cl, n)}
					ver, err := api.KVPut(ctx, key, []byte(in.value), client.PutOptions{})
					ret := h.now()
					out := kvOutput{version: ver}
					if errors.Is(err, syscall.ECONNREFUSED) {
						cancel()
						continue // never reached a server: it had no effect
					}
					if err != nil {
						out, ret = kvOutput{unknown: true}, 1<<62 // may take effect at any later time
					} else {
						mu.Lock()
						acked[key] = max(acked[key], ver)
						mu.Unlock()
					}
					h.add(porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret})
				} else {
					v, ver, err := api.KVGet(ctx, key, client.GetOptions{})
					ret := h.now()
					var ce *client.Error
					switch {
					case err == nil:
						h.add(porcupine.Operation{ClientId: cl, Input: kvInput{key: key}, Call: call,
							Output: kvOutput{value: string(v), version: ver, found: true}, Return: ret})
					case errors.As(err, &ce) && ce.Status == 404:
						h.add(porcupine.Operation{ClientId: cl, Input: kvInput{key: key}, Call: call,
							Output: kvOutput{}, Return: ret})
					}
				}
				cancel()
			}
		}(cl)
	}

	rng := rand.New(rand.NewPCG(42, 42))
	kills := chaosKills()
	for k := 0; k < kills; k++ {
		p := uint64(1 + rng.IntN(8))
		victim := c.LeaderOf(p)
		if victim < 0 {
			victim = rng.IntN(nodes)
		}
		c.Kill(victim)
		time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
		c.Restart(victim)
		time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	// Final reads: every acknowledged put is still there.
	for i := 0; i < keys; i++ {
		key := fmt.Sprintf("k%d", i)
		call := h.now()
		v, ver, err := apis[i%nodes].KVGet(context.Background(), key, client.GetOptions{})
		ret := h.now()
		var ce *client.Error
		switch {
		case err == nil:
			h.add(porcupine.Operation{ClientId: clients, Input: kvInput{key: key}, Call: call,
				Output: kvOutput{value: string(v), version: ver, found: true}, Return: ret})
		case errors.As(err, &ce) && ce.Status == 404:
			h.add(porcupine.Operation{ClientId: clients, Input: kvInput{key: key}, Call: call, Output: kvOutput{}, Return: ret})
		default:
			t.Fatalf("final read of %s: %v", key, err)
		}
		if ver < acked[key] {
			t.Errorf("%s: version %d, but version %d was acknowledged", key, ver, acked[key])
		}
	}

	c.VerifyReplicas(30 * time.Second)
	unknown := 0
	for _, op := range h.ops {
		if op.Output.(kvOutput).unknown {
			unknown++
		}
	}
	checkStart := time.Now()
	res, info := porcupine.CheckOperationsVerbose(kvModel, h.ops, 2*time.Minute)
	t.Logf("%d operations (%d with unknown outcome), %d leader kills; checked in %v", len(h.ops), unknown, kills, time.Since(checkStart))
	if res != porcupine.Ok {
		path := t.TempDir() + "/history.html"
		_ = porcupine.VisualizePath(kvModel, info, path)
		t.Fatalf("history is not linearizable (%s); visualization in %s", res, path)
	}
}
