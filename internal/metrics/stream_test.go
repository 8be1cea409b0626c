package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMetrics_RegisterStreams(t *testing.T) {
	m := New(Source{})
	m.RegisterStreams(func() StreamStats { return StreamStats{Subscribers: 3, Delivered: 120, SlowConsumers: 2} })
	body := scrape(m)
	for _, want := range []string{
		"parley_stream_subscribers 3",
		"parley_stream_events_delivered_total 120",
		"parley_stream_slow_consumers_total 2",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestMetrics_RegisterConns(t *testing.T) {
	m := New(Source{})
	m.RegisterConns(func() ConnStats { return ConnStats{Open: 7, Limit: 100, RefusedPerAddress: 4, RefusedTotal: 1} })
	body := scrape(m)
	for _, want := range []string{
		"parley_client_connections 7",
		"parley_client_connections_limit 100",
		`parley_client_connections_refused_total{cap="per_address"} 4`,
		`parley_client_connections_refused_total{cap="total"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// scrape returns what m's handler serves.
func scrape(m *Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}
