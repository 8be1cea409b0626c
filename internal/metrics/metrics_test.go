package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMetrics_Handler(t *testing.T) {
	m := New(Source{
		Engine:          func() EngineStats { return EngineStats{Rounds: 7, Syncs: 3, SyncNanos: 2e9, RoundPauses: 5} },
		Transport:       func() TransportStats { return TransportStats{RaftSent: 11, CallsSent: 5, CallsFailed: 1} },
		Applied:         func() map[uint64]uint64 { return map[uint64]uint64{0: 4, 3: 42} },
		UnderReplicated: func() int { return 2 },
		Storage:         func() StorageStats { return StorageStats{WALBytesWritten: 4096, WALFsyncs: 9, Flushes: 1} },
	})
	m.ObserveHTTP("PUT /api/v1/kv/{key...}", 200, 3*time.Millisecond)
	m.ObserveHTTP("PUT /api/v1/kv/{key...}", 503, time.Millisecond)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`parley_http_requests_total{code="200",route="PUT /api/v1/kv/{key...}"} 1`,
		`parley_http_requests_total{code="503",route="PUT /api/v1/kv/{key...}"} 1`,
		`parley_http_request_duration_seconds_count{route="PUT /api/v1/kv/{key...}"} 2`,
		`parley_raft_rounds_total 7`,
		`parley_raft_round_pauses_total 5`,
		`parley_raft_fsyncs_total 3`,
		`parley_raft_fsync_seconds_total 2`,
		`parley_partition_applied_index{group="3"} 42`,
		`parley_transport_raft_messages_total{direction="sent"} 11`,
		`parley_transport_calls_total{outcome="ok"} 4`,
		`parley_transport_calls_total{outcome="failed"} 1`,
		`parley_partitions_under_replicated 2`,
		`parley_storage_wal_bytes_total 4096`,
		`parley_storage_wal_fsyncs_total 9`,
		`parley_storage_flushes_total 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestProposalPhases_Observe(t *testing.T) {
	m := New(Source{})
	p := NewProposalPhases(m)
	p.Observe(PhaseTimes{Queue: time.Millisecond, Append: 400 * time.Microsecond, Quorum: 2 * time.Millisecond,
		Apply: 30 * time.Microsecond, Answer: 100 * time.Microsecond, Total: 3530 * time.Microsecond})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`parley_raft_proposal_phase_seconds_count{phase="queue"} 1`,
		`parley_raft_proposal_phase_seconds_sum{phase="quorum"} 0.002`,
		`parley_raft_proposal_phase_seconds_sum{phase="apply"} 3e-05`,
		`parley_raft_proposal_phase_seconds_count{phase="total"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestMetrics_ObserveHTTPConcurrently has goroutines observe requests of
// routes and statuses first seen at the same moment: every request is
// counted once, in its own series.
func TestMetrics_ObserveHTTPConcurrently(t *testing.T) {
	m := New(Source{})
	routes := []string{"GET /s/{code}", "PUT /api/v1/kv/{key...}", "POST /api/v1/queues/{name}/messages"}
	statuses := []int{200, 302, 404, 503}
	const each = 50
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				for _, r := range routes {
					for _, s := range statuses {
						m.ObserveHTTP(r, s, time.Millisecond)
					}
				}
			}
		})
	}
	wg.Wait()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, r := range routes {
		for _, s := range statuses {
			want := fmt.Sprintf("parley_http_requests_total{code=%q,route=%q} %d", strconv.Itoa(s), r, 8*each)
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		want := fmt.Sprintf("parley_http_request_duration_seconds_count{route=%q} %d", r, 8*each*len(statuses))
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// BenchmarkMetrics_ObserveHTTP is what observing one request costs once its
// route and status were seen.
func BenchmarkMetrics_ObserveHTTP(b *testing.B) {
	m := New(Source{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveHTTP("GET /s/{code}", 302, time.Millisecond)
		}
	})
}
