package partition

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/storage"
)

// BenchmarkStateMachine_ApplyKVPut measures applying one 256-byte KV put,
// as a node's driver does: a partition's state machine writing into a round
// batch of Pebble on the real disk, committed (unsynced) every 16 applies,
// over 625 keys (the bench's 10,000 keys over 16 partitions) that already
// hold a full history.
func BenchmarkStateMachine_ApplyKVPut(b *testing.B) {
	const keys, round = 625, 16
	db, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	g, err := db.Group(1)
	if err != nil {
		b.Fatal(err)
	}
	sm := StateMachine(nil)
	cmds := make([][]byte, keys)
	for i := range cmds {
		cmds[i] = kv.EncodePut(kv.Put{Key: fmt.Sprintf("bench/%08d", i), Value: bytes.Repeat([]byte{'v'}, 256)})
	}
	index := uint64(0)
	apply := func(n int) {
		batch := db.NewBatch()
		defer batch.Close()
		w := batch.State(g)
		for range n {
			index++
			res, err := sm.Apply(w, state.Meta{Partition: 1, Index: index, TimeMs: int64(index)}, cmds[index%keys])
			if err != nil || len(res) == 0 {
				b.Fatal(res, err)
			}
		}
		if err := batch.Commit(false); err != nil {
			b.Fatal(err)
		}
	}
	for range 20 * keys / round { // every key a full history
		apply(round)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		apply(min(round, b.N-done))
	}
}
