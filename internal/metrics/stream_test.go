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
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		"parley_stream_subscribers 3",
		"parley_stream_events_delivered_total 120",
		"parley_stream_slow_consumers_total 2",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
