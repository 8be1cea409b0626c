// Package metrics exposes a node's figures to Prometheus at /metrics: HTTP
// requests by route and status with their latency, the Raft engine's rounds,
// fsyncs and commit time, each partition's applied index, and internal
// traffic. Engine and transport figures are read when scraped, from the
// counters those packages keep anyway; nothing is counted twice.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// EngineStats are the multi-Raft engine's cumulative counters.
type EngineStats struct {
	Rounds, Syncs, EntriesApplied, ProposalsDropped uint64
	CommitNanos, SyncNanos                          uint64
	// RoundPauses counts the pauses the Raft loop took between rounds to
	// let more writes join the next (multiraft.Config.RoundPause).
	RoundPauses uint64
}

// TransportStats are the internal transport's cumulative counters.
type TransportStats struct {
	RaftSent, RaftDropped, RaftReceived uint64
	BytesSent, BytesReceived            uint64
	CallsSent, CallsFailed              uint64
	SnapshotsSent, SnapshotsReceived    uint64
}

// StorageStats are the node's Pebble figures (storage.PebbleStats):
// cumulative WAL bytes and fsyncs, flushes and compactions.
type StorageStats struct {
	WALBytesWritten      uint64
	WALFsyncs            uint64
	WALFsyncSeconds      float64
	Flushes, Compactions int64
	TableBytesWritten    uint64
}

// Source supplies the figures read at scrape time.
type Source struct {
	// Engine returns the engine's counters.
	Engine func() EngineStats
	// Transport returns the transport's counters.
	Transport func() TransportStats
	// Storage returns the database's figures.
	Storage func() StorageStats
	// Applied returns the applied index of every local replica by group.
	Applied func() map[uint64]uint64
	// ClusterEvents returns how many cluster events of each kind (node_dead,
	// replica_added, ...) this node recorded.
	ClusterEvents func() map[string]uint64
	// UnderReplicated returns how many partitions this node leads have
	// fewer full replicas than they should (see
	// parley_partitions_under_replicated).
	UnderReplicated func() int
}

// Metrics is one node's registry.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	// bound holds the series ObserveHTTP has used, by route and status,
	// so that a request costs one map lookup instead of two label
	// lookups and a status string. It is replaced, never changed, under
	// bindMu: readers take no lock. Routes are the mux's patterns and
	// statuses the handlers' own, so it stays small.
	bound  atomic.Pointer[map[routeStatus]httpSeries]
	bindMu sync.Mutex
}

// routeStatus is the key of a request's series.
type routeStatus struct {
	route  string
	status int
}

// httpSeries are a route and status's request counter and the route's
// latency histogram.
type httpSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// New registers the node's metrics, reading src when scraped.
func New(src Source) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_http_requests_total", Help: "HTTP requests by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "parley_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0002, 2, 16), // 0.2 ms .. 6.5 s
		}, []string{"route"}),
	}
	m.bound.Store(&map[routeStatus]httpSeries{})
	m.reg.MustRegister(m.requests, m.latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&scraped{src: src})
	return m
}

// ObserveHTTP records one request; it matches api.Config.Observe.
func (m *Metrics) ObserveHTTP(route string, status int, d time.Duration) {
	key := routeStatus{route, status}
	s, ok := (*m.bound.Load())[key]
	if !ok {
		s = m.bind(key)
	}
	s.requests.Inc()
	s.latency.Observe(d.Seconds())
}

// bind returns the series of key, adding them to bound.
func (m *Metrics) bind(key routeStatus) httpSeries {
	m.bindMu.Lock()
	defer m.bindMu.Unlock()
	old := *m.bound.Load()
	if s, ok := old[key]; ok {
		return s
	}
	s := httpSeries{
		requests: m.requests.WithLabelValues(key.route, strconv.Itoa(key.status)),
		latency:  m.latency.WithLabelValues(key.route),
	}
	next := make(map[routeStatus]httpSeries, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[key] = s
	m.bound.Store(&next)
	return s
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// scraped turns the counters of Source into metrics at scrape time.
type scraped struct{ src Source }

var (
	descRounds     = prometheus.NewDesc("parley_raft_rounds_total", "Driver rounds that persisted at least one Ready.", nil, nil)
	descPauses     = prometheus.NewDesc("parley_raft_round_pauses_total", "Pauses the Raft loop took after a committed round while writes waited, so the next round carries more of them (--round-pause).", nil, nil)
	descSyncs      = prometheus.NewDesc("parley_raft_fsyncs_total", "Round batches committed with fsync.", nil, nil)
	descApplied    = prometheus.NewDesc("parley_raft_entries_applied_total", "Committed entries applied.", nil, nil)
	descDropped    = prometheus.NewDesc("parley_raft_proposals_dropped_total", "Proposals Raft refused (no leader, transfer in progress).", nil, nil)
	descCommitSec  = prometheus.NewDesc("parley_raft_commit_seconds_total", "Time spent committing round batches, fsync included.", nil, nil)
	descSyncSec    = prometheus.NewDesc("parley_raft_fsync_seconds_total", "Time spent in round commits that fsynced.", nil, nil)
	descIndex      = prometheus.NewDesc("parley_partition_applied_index", "Applied Raft index of the local replica of a group (0 is the metadata group).", []string{"group"}, nil)
	descRaftMsgs   = prometheus.NewDesc("parley_transport_raft_messages_total", "Raft messages by direction (sent, received, dropped).", []string{"direction"}, nil)
	descBytes      = prometheus.NewDesc("parley_transport_bytes_total", "Bytes of internal traffic by direction.", []string{"direction"}, nil)
	descCalls      = prometheus.NewDesc("parley_transport_calls_total", "Internal calls (forwarded requests) by outcome.", []string{"outcome"}, nil)
	descSnapshots  = prometheus.NewDesc("parley_transport_snapshots_total", "Snapshot streams by direction.", []string{"direction"}, nil)
	descEvents     = prometheus.NewDesc("parley_cluster_events_total", "Cluster events this node recorded, by kind (its gossip view and, as metadata leader, placement decisions).", []string{"kind"}, nil)
	descUnderRepl  = prometheus.NewDesc("parley_partitions_under_replicated", "Partitions this node leads with fewer recently active, caught-up voters than the replication factor (or a membership change in flight); summed over the nodes, the cluster's count of led partitions not fully replicated.", nil, nil)
	descWALBytes   = prometheus.NewDesc("parley_storage_wal_bytes_total", "Bytes written to the database's write-ahead log (a sync makes every byte since the previous one durable).", nil, nil)
	descWALSyncs   = prometheus.NewDesc("parley_storage_wal_fsyncs_total", "Fsyncs of the write-ahead log.", nil, nil)
	descWALSyncSec = prometheus.NewDesc("parley_storage_wal_fsync_seconds_total", "Time spent in fsyncs of the write-ahead log.", nil, nil)
	descFlushes    = prometheus.NewDesc("parley_storage_flushes_total", "Memtable flushes.", nil, nil)
	descCompacts   = prometheus.NewDesc("parley_storage_compactions_total", "Compactions.", nil, nil)
	descTableBytes = prometheus.NewDesc("parley_storage_table_bytes_written_total", "Bytes flushes and compactions wrote to tables.", nil, nil)
	scrapedMetrics = []*prometheus.Desc{descRounds, descPauses, descSyncs, descApplied, descDropped, descCommitSec, descSyncSec, descIndex, descRaftMsgs, descBytes, descCalls, descSnapshots, descEvents, descUnderRepl,
		descWALBytes, descWALSyncs, descWALSyncSec, descFlushes, descCompacts, descTableBytes}
)

// Describe implements prometheus.Collector.
func (s *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range scrapedMetrics {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (s *scraped) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	if s.src.Engine != nil {
		e := s.src.Engine()
		counter(descRounds, float64(e.Rounds))
		counter(descPauses, float64(e.RoundPauses))
		counter(descSyncs, float64(e.Syncs))
		counter(descApplied, float64(e.EntriesApplied))
		counter(descDropped, float64(e.ProposalsDropped))
		counter(descCommitSec, float64(e.CommitNanos)/1e9)
		counter(descSyncSec, float64(e.SyncNanos)/1e9)
	}
	if s.src.Storage != nil {
		st := s.src.Storage()
		counter(descWALBytes, float64(st.WALBytesWritten))
		counter(descWALSyncs, float64(st.WALFsyncs))
		counter(descWALSyncSec, st.WALFsyncSeconds)
		counter(descFlushes, float64(st.Flushes))
		counter(descCompacts, float64(st.Compactions))
		counter(descTableBytes, float64(st.TableBytesWritten))
	}
	if s.src.Applied != nil {
		for g, idx := range s.src.Applied() {
			ch <- prometheus.MustNewConstMetric(descIndex, prometheus.GaugeValue, float64(idx), strconv.FormatUint(g, 10))
		}
	}
	if s.src.Transport != nil {
		t := s.src.Transport()
		counter(descRaftMsgs, float64(t.RaftSent), "sent")
		counter(descRaftMsgs, float64(t.RaftReceived), "received")
		counter(descRaftMsgs, float64(t.RaftDropped), "dropped")
		counter(descBytes, float64(t.BytesSent), "sent")
		counter(descBytes, float64(t.BytesReceived), "received")
		counter(descCalls, float64(t.CallsSent-min(t.CallsFailed, t.CallsSent)), "ok")
		counter(descCalls, float64(t.CallsFailed), "failed")
		counter(descSnapshots, float64(t.SnapshotsSent), "sent")
		counter(descSnapshots, float64(t.SnapshotsReceived), "received")
	}
	if s.src.ClusterEvents != nil {
		for kind, v := range s.src.ClusterEvents() {
			counter(descEvents, float64(v), kind)
		}
	}
	if s.src.UnderReplicated != nil {
		ch <- prometheus.MustNewConstMetric(descUnderRepl, prometheus.GaugeValue, float64(s.src.UnderReplicated()))
	}
}
