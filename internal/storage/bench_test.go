package storage

import (
	"bytes"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
)

// BenchmarkBatch_AppendCommit measures one driver round: 16 groups each appending one
// 256-byte entry and updating its hard state, committed as one batch, on the real disk.
func BenchmarkBatch_AppendCommit(b *testing.B) {
	for _, sync := range []bool{true, false} {
		name := "nosync"
		if sync {
			name = "sync"
		}
		b.Run(name, func(b *testing.B) {
			const groups = 16
			db := mustOpen(b, b.TempDir(), Options{})
			payload := bytes.Repeat([]byte{'x'}, 256)
			gs := make([]*GroupStorage, groups)
			ents := make([][]raftpb.Entry, groups)
			for i := range gs {
				gs[i] = mustGroup(b, db, uint64(i+1))
				ents[i] = []raftpb.Entry{{Term: 1, Data: payload}}
			}
			b.ReportAllocs()
			b.SetBytes(groups * 256)
			b.ResetTimer()
			for round := range b.N {
				batch := db.NewBatch()
				for i, g := range gs {
					ents[i][0].Index = uint64(round + 1)
					if err := batch.Append(g, ents[i]); err != nil {
						b.Fatal(err)
					}
					if err := batch.SetHardState(g, raftpb.HardState{Term: 1, Vote: 1, Commit: uint64(round + 1)}); err != nil {
						b.Fatal(err)
					}
				}
				if err := batch.Commit(sync); err != nil {
					b.Fatal(err)
				}
				batch.Close()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*groups), "ns/entry")
			if sync {
				b.ReportMetric(float64(db.SyncCount())/float64(b.N*groups), "fsyncs/entry")
			}
		})
	}
}

// BenchmarkGroupStorage_Entries measures a leader reading fresh entries for MsgApp (from the
// cache) and a lagging follower's entries (from Pebble).
func BenchmarkGroupStorage_Entries(b *testing.B) {
	db := mustOpen(b, "a", memOptions())
	g := mustGroup(b, db, 1)
	payload := bytes.Repeat([]byte{'x'}, 256)
	for lo := uint64(1); lo <= 4096; lo += 512 {
		ents := make([]raftpb.Entry, 512)
		for i := range ents {
			ents[i] = raftpb.Entry{Term: 1, Index: lo + uint64(i), Data: payload}
		}
		mustWrite(b, db, func(batch *Batch) error { return batch.Append(g, ents) })
	}
	for _, tc := range []struct {
		name string
		lo   uint64
	}{{"cache", 4000}, {"pebble", 100}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if ents, err := g.Entries(tc.lo, tc.lo+64, 1<<20); err != nil || len(ents) != 64 {
					b.Fatal(len(ents), err)
				}
			}
		})
	}
}
