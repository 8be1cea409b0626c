package jepsen

import (
	"math/rand/v2"
	"sync"
	"time"
)

// runner runs a workload's clients until Stop and counts their operations;
// its mutex also guards what the embedding workload records.
type runner struct {
	stopc chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	ops   int
}

func newRunner() runner { return runner{stopc: make(chan struct{})} }

// run starts n clients; client cl calls step with its operation number i
// and its own random source until Stop.
func (r *runner) run(n int, step func(cl, i int, rng *rand.Rand)) {
	for cl := range n {
		r.wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(cl), uint64(time.Now().UnixNano())))
			for i := 0; ; i++ {
				select {
				case <-r.stopc:
					return
				default:
				}
				step(cl, i, rng)
			}
		})
	}
}

// Stop stops the clients and waits for them.
func (r *runner) Stop() {
	close(r.stopc)
	r.wg.Wait()
}

// count counts one operation.
func (r *runner) count() {
	r.mu.Lock()
	r.ops++
	r.mu.Unlock()
}
