package faults_test

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
	"github.com/parley-chat/parley/internal/linearizable"
	"github.com/parley-chat/parley/internal/testcluster"
)

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
	h := linearizable.NewHistory()
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
				call := h.Now()
				if rng.IntN(2) == 0 {
					in := linearizable.KVInput{Put: true, Key: key, Value: fmt.Sprintf("c%d-%d", cl, n)}
					ver, err := api.KVPut(ctx, key, []byte(in.Value), client.PutOptions{})
					ret := h.Now()
					out := linearizable.KVOutput{Version: ver}
					if errors.Is(err, syscall.ECONNREFUSED) {
						cancel()
						continue // never reached a server: it had no effect
					}
					if err != nil {
						out, ret = linearizable.KVOutput{Unknown: true}, linearizable.UnknownReturn // may take effect at any later time
					} else {
						mu.Lock()
						acked[key] = max(acked[key], ver)
						mu.Unlock()
					}
					h.Add(porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret})
				} else {
					v, ver, err := api.KVGet(ctx, key, client.GetOptions{})
					ret := h.Now()
					var ce *client.Error
					switch {
					case err == nil:
						h.Add(porcupine.Operation{ClientId: cl, Input: linearizable.KVInput{Key: key}, Call: call,
							Output: linearizable.KVOutput{Value: string(v), Version: ver, Found: true}, Return: ret})
					case errors.As(err, &ce) && ce.Status == 404:
						h.Add(porcupine.Operation{ClientId: cl, Input: linearizable.KVInput{Key: key}, Call: call,
							Output: linearizable.KVOutput{}, Return: ret})
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
		call := h.Now()
		v, ver, err := apis[i%nodes].KVGet(context.Background(), key, client.GetOptions{})
		ret := h.Now()
		var ce *client.Error
		switch {
		case err == nil:
			h.Add(porcupine.Operation{ClientId: clients, Input: linearizable.KVInput{Key: key}, Call: call,
				Output: linearizable.KVOutput{Value: string(v), Version: ver, Found: true}, Return: ret})
		case errors.As(err, &ce) && ce.Status == 404:
			h.Add(porcupine.Operation{ClientId: clients, Input: linearizable.KVInput{Key: key}, Call: call, Output: linearizable.KVOutput{}, Return: ret})
		default:
			t.Fatalf("final read of %s: %v", key, err)
		}
		if ver < acked[key] {
			t.Errorf("%s: version %d, but version %d was acknowledged", key, ver, acked[key])
		}
	}

	c.VerifyReplicas(30 * time.Second)
	unknown := h.Unknown()
	checkStart := time.Now()
	path := t.TempDir() + "/history.html"
	res := h.Check(2*time.Minute, path)
	t.Logf("%d operations (%d with unknown outcome), %d leader kills; checked in %v", len(h.Ops()), unknown, kills, time.Since(checkStart))
	if res != porcupine.Ok {
		t.Fatalf("history is not linearizable (%s); visualization in %s", res, path)
	}
}
