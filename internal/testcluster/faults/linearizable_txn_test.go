package faults_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/linearizable"
	"github.com/parley-chat/parley/internal/testcluster"
)

// A transaction history over groups of two keys sharing a {tag} (so one
// partition): "{gN}/a" and "{gN}/b". Operations: a compare-and-set
// transaction that, when a is at the version the client last saw, writes
// one value to both keys (else reads a); a plain put of a (the existing
// single-key path beside transactions); and a read transaction of both.
// The model is one group's two keys; a and b move together except for
// plain puts, which move a alone.

type txnKind int

const (
	txnCAS txnKind = iota
	txnRead
	txnPutA
)

type txnInput struct {
	kind    txnKind
	group   int
	version uint64 // txnCAS: the version of a compared
	value   string
}

type txnKey struct {
	value   string
	version uint64
}

type txnOutput struct {
	unknown   bool
	succeeded bool
	a, b      txnKey // txnRead: both; txnCAS: the new versions or (failed) a as read; txnPutA: a's new version
}

type txnState struct{ a, b txnKey }

var kvTxnModel = porcupine.Model{
	Partition: linearizable.PartitionBy(func(in any) string { return fmt.Sprint(in.(txnInput).group) }),
	Init:      func() any { return txnState{} },
	Step: func(s, in, out any) (bool, any) {
		st, i, o := s.(txnState), in.(txnInput), out.(txnOutput)
		switch i.kind {
		case txnRead:
			return o.a == st.a && o.b == st.b, st
		case txnPutA:
			next := st
			next.a = txnKey{i.value, st.a.version + 1}
			return o.unknown || o.a.version == next.a.version, next
		}
		holds := st.a.version == i.version
		next := st
		if holds {
			next = txnState{a: txnKey{i.value, st.a.version + 1}, b: txnKey{i.value, st.b.version + 1}}
		}
		switch {
		case o.unknown:
			return true, next
		case o.succeeded != holds:
			return false, st
		case holds:
			return o.a.version == next.a.version && o.b.version == next.b.version, next
		default:
			return o.a == st.a, st
		}
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(txnInput), out.(txnOutput)
		switch i.kind {
		case txnRead:
			return fmt.Sprintf("read(g%d) -> a=%v b=%v", i.group, o.a, o.b)
		case txnPutA:
			return fmt.Sprintf("put(g%d/a,%s) -> v%d unknown=%v", i.group, i.value, o.a.version, o.unknown)
		}
		return fmt.Sprintf("cas(g%d a@v%d -> %s) -> ok=%v a=%v b=%v unknown=%v", i.group, i.version, i.value, o.succeeded, o.a, o.b, o.unknown)
	},
}

func groupKeys(g int) (a, b string) { return fmt.Sprintf("{g%d}/a", g), fmt.Sprintf("{g%d}/b", g) }

// txnClient runs one client's operations until stop, recording them.
func txnClient(h *linearizable.History, apis []*client.Client, cl, groups int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(cl), 11))
	seen := map[int]uint64{} // the version of a this client last saw, per group
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		g := rng.IntN(groups)
		ka, kb := groupKeys(g)
		api := apis[rng.IntN(len(apis))]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		in := txnInput{group: g, value: fmt.Sprintf("c%d-%d", cl, n)}
		call := h.Now()
		var out txnOutput
		var err error
		switch r := rng.IntN(10); {
		case r < 5:
			in.kind, in.version = txnCAS, seen[g]
			var res client.TxnResult
			res, err = api.KVTxn(ctx, client.Txn{
				Compare: []client.TxnCompare{{Key: ka, Version: in.version}},
				Success: []client.TxnOp{client.TxnPut(ka, []byte(in.value)), client.TxnPut(kb, []byte(in.value))},
				Failure: []client.TxnOp{client.TxnGet(ka)},
			})
			if err == nil {
				out.succeeded = res.Succeeded
				if res.Succeeded {
					out.a.version, out.b.version = res.Results[0].Version, res.Results[1].Version
				} else {
					out.a = txnKey{string(res.Results[0].Value), res.Results[0].Version}
				}
				seen[g] = out.a.version
			}
		case r < 8:
			in.kind = txnRead
			var res client.TxnResult
			res, err = api.KVTxn(ctx, client.Txn{Success: []client.TxnOp{client.TxnGet(ka), client.TxnGet(kb)}})
			if err == nil {
				out.a = txnKey{string(res.Results[0].Value), res.Results[0].Version}
				out.b = txnKey{string(res.Results[1].Value), res.Results[1].Version}
				seen[g] = out.a.version
			}
		default:
			in.kind = txnPutA
			out.a.version, err = api.KVPut(ctx, ka, []byte(in.value), client.PutOptions{})
		}
		cancel()
		ret := h.Now()
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			continue // never reached a server
		case err != nil && in.kind == txnRead:
			continue // a failed read has no effect
		case err != nil:
			out, ret = txnOutput{unknown: true}, 1<<62
		}
		h.Add(porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret})
	}
}

// Clients run compare-and-set transactions, read transactions and plain
// puts over groups of {tag}ged keys through random nodes while partition
// leaders are killed and moved: the history must be linearizable.
func TestLinearizability_KVTxnUnderKillsAndLeaderMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const nodes, clients, groups, partitions = 3, 12, 16, 8
	c := testcluster.New(t, testcluster.Options{Nodes: nodes, Partitions: partitions})
	h := linearizable.NewHistory()
	stop := make(chan struct{})
	apis := make([]*client.Client, nodes)
	for i := range apis {
		apis[i] = c.Client(i)
	}
	var wg sync.WaitGroup
	for cl := range clients {
		wg.Go(func() { txnClient(h, apis, cl, groups, stop) })
	}
	rng := rand.New(rand.NewPCG(5, 6))
	kills := chaosKills()
	for k := range kills {
		p := uint64(1 + rng.IntN(partitions))
		leader := c.LeaderOf(p)
		if k%2 == 1 && leader >= 0 {
			moveLeadersOff(c, leader)
		} else {
			victim := leader
			if victim < 0 {
				victim = rng.IntN(nodes)
			}
			c.Kill(victim)
			time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
			c.Restart(victim)
		}
		time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for g := range groups {
		ka, kb := groupKeys(g)
		call := h.Now()
		res, err := apis[g%nodes].KVTxn(context.Background(), client.Txn{Success: []client.TxnOp{client.TxnGet(ka), client.TxnGet(kb)}})
		if err != nil {
			t.Fatalf("final read of group %d: %v", g, err)
		}
		h.Add(porcupine.Operation{ClientId: clients, Input: txnInput{kind: txnRead, group: g}, Call: call, Return: h.Now(),
			Output: txnOutput{a: txnKey{string(res.Results[0].Value), res.Results[0].Version}, b: txnKey{string(res.Results[1].Value), res.Results[1].Version}}})
		if !bytes.Equal(res.Results[0].Value, res.Results[1].Value) && res.Results[0].Version == res.Results[1].Version {
			t.Errorf("group %d: a and b at one version hold different values", g)
		}
	}
	c.VerifyReplicas(30 * time.Second)
	res, info := porcupine.CheckOperationsVerbose(kvTxnModel, h.Ops(), 2*time.Minute)
	t.Logf("%d operations, %d kills and leader moves", len(h.Ops()), kills)
	if res != porcupine.Ok {
		path := t.TempDir() + "/txn-history.html"
		_ = porcupine.VisualizePath(kvTxnModel, info, path)
		t.Fatalf("transaction history is not linearizable (%s); visualization in %s", res, path)
	}
}

// moveLeadersOff hands every group node from leads to other replicas,
// best effort: leader moves without a kill.
func moveLeadersOff(c *testcluster.Cluster, from int) {
	n := c.Node(from)
	if n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = n.Engine().TransferLeadership(ctx)
}

// The checker itself: histories a broken store would produce are refused.
func TestKVTxnModel_RefusesBrokenHistories(t *testing.T) {
	op := func(cl int, in txnInput, out txnOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: cl, Input: in, Output: out, Call: call, Return: ret}
	}
	cas := func(ver uint64, v string) txnInput { return txnInput{kind: txnCAS, version: ver, value: v} }
	won := func(ver uint64) txnOutput {
		return txnOutput{succeeded: true, a: txnKey{version: ver}, b: txnKey{version: ver}}
	}
	for name, h := range map[string][]porcupine.Operation{
		"two compare-and-sets from one version both succeed": {
			op(0, cas(0, "x"), won(1), 0, 10), op(1, cas(0, "y"), won(1), 1, 11),
		},
		"a read sees a and b from different transactions": {
			op(0, cas(0, "x"), won(1), 0, 10),
			op(1, txnInput{kind: txnRead}, txnOutput{a: txnKey{"x", 1}, b: txnKey{"", 0}}, 20, 30),
		},
		"a read misses an acknowledged transaction": {
			op(0, cas(0, "x"), won(1), 0, 10),
			op(1, txnInput{kind: txnRead}, txnOutput{}, 20, 30),
		},
	} {
		if porcupine.CheckOperations(kvTxnModel, h) {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := []porcupine.Operation{
		op(0, cas(0, "x"), won(1), 0, 10),
		op(1, cas(0, "y"), txnOutput{a: txnKey{"x", 1}}, 5, 15),
		op(2, txnInput{kind: txnRead}, txnOutput{a: txnKey{"x", 1}, b: txnKey{"x", 1}}, 20, 30),
	}
	if !porcupine.CheckOperations(kvTxnModel, ok) {
		t.Error("a linearizable history was refused")
	}
}
