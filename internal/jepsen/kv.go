package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/linearizable"
)

// KV puts and gets a small key space through random nodes, every put with
// its own idempotency key retried on other nodes, and records a history
// for porcupine.
type KV struct {
	runner
	nodes  []*client.Client
	prefix string
	keys   int
	h      *linearizable.History

	acked   int
	unknown int
	highest map[string]uint64            // highest acknowledged version per key
	byVer   map[string]map[uint64]string // acknowledged value per key and version
	dups    int
}

// NewKV returns a KV workload on keys prefix0..prefix<keys-1> through the
// given clients (one per node, signed in).
func NewKV(nodes []*client.Client, prefix string, keys int) *KV {
	return &KV{runner: newRunner(), nodes: nodes, prefix: prefix, keys: keys, h: linearizable.NewHistory(),
		highest: map[string]uint64{}, byVer: map[string]map[uint64]string{}}
}

// Name implements Workload.
func (w *KV) Name() string { return "kv" }

// Start starts n clients.
func (w *KV) Start(n int) { w.run(n, w.step) }

// step puts or gets a random key through a random node.
func (w *KV) step(cl, i int, rng *rand.Rand) {
	key := fmt.Sprintf("%s%d", w.prefix, rng.IntN(w.keys))
	first := rng.IntN(len(w.nodes))
	if rng.IntN(2) == 0 {
		w.put(cl, key, fmt.Sprintf("c%d-%d", cl, i), first)
	} else {
		w.get(cl, key, w.nodes[first])
	}
}

// put writes value, retrying on the next nodes with the same idempotency
// key, and records the outcome.
func (w *KV) put(cl int, key, value string, first int) {
	in := linearizable.KVInput{Put: true, Key: key, Value: value}
	call := w.h.Now()
	var ver uint64
	outcome, _ := retry(func(ctx context.Context, attempt int) error {
		var err error
		ver, err = w.nodes[(first+attempt)%len(w.nodes)].KVPut(ctx, key, []byte(value), client.PutOptions{IdempotencyKey: w.prefix + value})
		return err
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ops++
	switch outcome {
	case Acked:
		w.acked++
		w.h.Add(porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: linearizable.KVOutput{Version: ver}, Return: w.h.Now()})
		w.highest[key] = max(w.highest[key], ver)
		if w.byVer[key] == nil {
			w.byVer[key] = map[uint64]string{}
		}
		if old, ok := w.byVer[key][ver]; ok && old != value {
			w.dups++ // two puts acknowledged with one version
		}
		w.byVer[key][ver] = value
	case Unknown:
		w.unknown++
		w.h.Add(porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: linearizable.KVOutput{Unknown: true}, Return: linearizable.UnknownReturn})
	}
}

// get reads key through one node (linearizable read) and records what it
// saw; a failed read is left out of the history (it observed nothing).
func (w *KV) get(cl int, key string, via *client.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
	defer cancel()
	call := w.h.Now()
	v, ver, err := via.KVGet(ctx, key, client.GetOptions{})
	ret := w.h.Now()
	var out linearizable.KVOutput
	var ce *client.Error
	switch {
	case err == nil:
		out = linearizable.KVOutput{Value: string(v), Version: ver, Found: true}
	case errors.As(err, &ce) && ce.Status == 404:
	default:
		w.count()
		return
	}
	w.count()
	w.h.Add(porcupine.Operation{ClientId: cl, Input: linearizable.KVInput{Key: key}, Call: call, Output: out, Return: ret})
}

// Check reads every key (through via, or the next node that answers:
// every read is linearizable) after the cluster healed, adds the reads to
// the history, counts acknowledged versions missing and checks the history
// with porcupine; a history that is not linearizable is described in
// detail and visualized at vizPath.
func (w *KV) Check(via *client.Client, vizPath string, r *Result) error {
	for i := range w.keys {
		key := fmt.Sprintf("%s%d", w.prefix, i)
		call := w.h.Now()
		var v []byte
		var ver uint64
		var err error
		for _, api := range append([]*client.Client{via}, w.nodes...) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			v, ver, err = api.KVGet(ctx, key, client.GetOptions{})
			cancel()
			if err == nil || !retryable(err) {
				break
			}
		}
		out := linearizable.KVOutput{Value: string(v), Version: ver, Found: true}
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && ce.Status == 404:
			out = linearizable.KVOutput{}
		case err != nil:
			return fmt.Errorf("final read of %s: %w", key, err)
		}
		w.h.Add(porcupine.Operation{ClientId: -1, Input: linearizable.KVInput{Key: key}, Call: call, Output: out, Return: w.h.Now()})
		if ver < w.highest[key] || (ver == w.highest[key] && ver > 0 && string(v) != w.byVer[key][ver]) {
			r.Lost++
		}
	}
	r.Workload, r.Ops, r.Acked, r.Unknown, r.Duplicated = w.Name(), w.ops, w.acked, w.unknown, w.dups
	r.Linearizable = "yes"
	if res := w.h.Check(3*time.Minute, vizPath); res != porcupine.Ok {
		r.Linearizable = "no"
		if res == porcupine.Unknown {
			r.Linearizable = "unknown" // the checker ran out of time
		}
		r.Detail += fmt.Sprintf(" porcupine: %s (visualization %s); first key not linearizable:\n%s", res, vizPath, linearizable.FirstIllegal(w.h.Ops()))
	}
	return nil
}
