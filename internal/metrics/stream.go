package metrics

import "github.com/prometheus/client_golang/prometheus"

// StreamStats are the live streams' figures.
type StreamStats struct {
	// Subscribers is the number of open stream connections.
	Subscribers int64
	// Delivered counts event frames queued for subscribers.
	Delivered uint64
	// SlowConsumers counts connections closed because they fell behind.
	SlowConsumers uint64
}

var (
	descStreamSubs      = prometheus.NewDesc("parley_stream_subscribers", "Open live stream connections.", nil, nil)
	descStreamDelivered = prometheus.NewDesc("parley_stream_events_delivered_total", "Event frames queued for stream subscribers.", nil, nil)
	descStreamSlow      = prometheus.NewDesc("parley_stream_slow_consumers_total", "Stream connections closed with slow_consumer.", nil, nil)
)

// streamCollector reads StreamStats at scrape time.
type streamCollector struct{ stats func() StreamStats }

// Describe implements prometheus.Collector.
func (c streamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descStreamSubs
	ch <- descStreamDelivered
	ch <- descStreamSlow
}

// Collect implements prometheus.Collector.
func (c streamCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(descStreamSubs, prometheus.GaugeValue, float64(s.Subscribers))
	ch <- prometheus.MustNewConstMetric(descStreamDelivered, prometheus.CounterValue, float64(s.Delivered))
	ch <- prometheus.MustNewConstMetric(descStreamSlow, prometheus.CounterValue, float64(s.SlowConsumers))
}

// RegisterStreams adds the live streams' metrics, read from stats when
// scraped. Call it once.
func (m *Metrics) RegisterStreams(stats func() StreamStats) {
	m.reg.MustRegister(streamCollector{stats: stats})
}
