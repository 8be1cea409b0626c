package metrics

import "github.com/prometheus/client_golang/prometheus"

// ConnStats are the node's client connections (API and links listeners).
type ConnStats struct {
	// Open is the client connections open now.
	Open int
	// Limit is the cap on them all (0: none).
	Limit int
	// RefusedPerAddress and RefusedTotal count connections closed at
	// accept because their address, or the node, was at its cap.
	RefusedPerAddress, RefusedTotal uint64
}

var (
	descConnsOpen    = prometheus.NewDesc("parley_client_connections", "Client connections open on the API and links listeners.", nil, nil)
	descConnsLimit   = prometheus.NewDesc("parley_client_connections_limit", "The cap on client connections (--limit-conns; 0: none).", nil, nil)
	descConnsRefused = prometheus.NewDesc("parley_client_connections_refused_total", "Client connections closed at accept because a cap was reached, by cap (per_address or total).", []string{"cap"}, nil)
)

// connCollector reads ConnStats at scrape time.
type connCollector struct{ stats func() ConnStats }

// Describe implements prometheus.Collector.
func (c connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descConnsOpen
	ch <- descConnsLimit
	ch <- descConnsRefused
}

// Collect implements prometheus.Collector.
func (c connCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(descConnsOpen, prometheus.GaugeValue, float64(s.Open))
	ch <- prometheus.MustNewConstMetric(descConnsLimit, prometheus.GaugeValue, float64(s.Limit))
	ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(s.RefusedPerAddress), "per_address")
	ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(s.RefusedTotal), "total")
}

// RegisterConns adds the client connections' metrics, read from stats
// when scraped. Call it once.
func (m *Metrics) RegisterConns(stats func() ConnStats) {
	m.reg.MustRegister(connCollector{stats: stats})
}
