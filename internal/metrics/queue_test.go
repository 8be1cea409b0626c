package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMetrics_RegisterQueues(t *testing.T) {
	m := New(Source{})
	m.RegisterQueues(func() []QueueStats {
		return []QueueStats{{Queue: "jobs", Ready: 4, Leased: 2, Delayed: 1, DeadLettered: 7, Dropped: 3, Expired: 5, Moving: 1, OldestAgeSeconds: 1.5}}
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`parley_queue_messages{queue="jobs",state="ready"} 4`,
		`parley_queue_messages{queue="jobs",state="leased"} 2`,
		`parley_queue_messages{queue="jobs",state="delayed"} 1`,
		`parley_queue_messages{queue="jobs",state="dead_letter"} 0`,
		`parley_queue_dead_lettered_total{queue="jobs"} 7`,
		`parley_queue_dropped_total{queue="jobs"} 3`,
		`parley_queue_expired_total{queue="jobs"} 5`,
		`parley_queue_moving{queue="jobs"} 1`,
		`parley_queue_oldest_message_age_seconds{queue="jobs"} 1.5`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
