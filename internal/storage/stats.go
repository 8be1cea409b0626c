package storage

import (
	dto "github.com/prometheus/client_model/go"
)

// PebbleStats are the figures of the node's Pebble database that explain
// what a synced round costs: what the WAL carries (an fsync makes durable
// every byte written to the WAL since the last one, synced or not), the
// WAL's own fsyncs, and the flushes and compactions sharing the disk.
type PebbleStats struct {
	// WALBytesWritten counts bytes written to the WAL, padding included.
	WALBytesWritten uint64
	// WALFsyncs counts the WAL's fsyncs and WALFsyncSeconds their time.
	WALFsyncs       uint64
	WALFsyncSeconds float64
	// Flushes and Compactions count memtable flushes and compactions;
	// TableBytesWritten is what they wrote to tables.
	Flushes, Compactions int64
	TableBytesWritten    uint64
}

// PebbleStats returns the database's cumulative figures. It gathers all of
// Pebble's metrics: meant for a scrape, not for a hot path.
func (db *DB) PebbleStats() PebbleStats {
	m := db.pdb.Metrics()
	st := PebbleStats{
		WALBytesWritten: m.WAL.BytesWritten,
		Flushes:         m.Flush.Count,
		Compactions:     m.Compact.Count,
	}
	for i := range m.Levels { // not m.Total(), which counts the WAL as flushed
		st.TableBytesWritten += m.Levels[i].TableBytesFlushed + m.Levels[i].TableBytesCompacted
	}
	if h := m.LogWriter.FsyncLatency; h != nil {
		var pb dto.Metric
		if h.Write(&pb) == nil && pb.Histogram != nil {
			// Pebble records the latency in nanoseconds.
			st.WALFsyncs = pb.Histogram.GetSampleCount()
			st.WALFsyncSeconds = pb.Histogram.GetSampleSum() / 1e9
		}
	}
	return st
}
