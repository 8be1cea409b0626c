package metrics

import "github.com/prometheus/client_golang/prometheus"

// SearchStats are a node's chat search indexes (internal/search).
type SearchStats struct {
	// Ready and Building count the partitions this node keeps an index of:
	// ready to answer, or still being built.
	Ready, Building int
}

var descSearchIndexes = prometheus.NewDesc("parley_search_indexes",
	"Partitions this node keeps a chat search index of, by state (ready, building).", []string{"state"}, nil)

// searchCollector reads SearchStats at scrape time.
type searchCollector struct{ stats func() SearchStats }

// Describe implements prometheus.Collector.
func (c searchCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descSearchIndexes }

// Collect implements prometheus.Collector.
func (c searchCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(descSearchIndexes, prometheus.GaugeValue, float64(s.Ready), "ready")
	ch <- prometheus.MustNewConstMetric(descSearchIndexes, prometheus.GaugeValue, float64(s.Building), "building")
}

// RegisterSearch adds the search indexes' metrics, read from stats when
// scraped. Call it once.
func (m *Metrics) RegisterSearch(stats func() SearchStats) {
	m.reg.MustRegister(searchCollector{stats: stats})
}
