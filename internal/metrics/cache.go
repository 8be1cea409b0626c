package metrics

import "github.com/prometheus/client_golang/prometheus"

// CacheCounts are a read cache's cumulative lookups.
type CacheCounts struct {
	Hits, Misses uint64
}

// RegisterCache exports a read cache's counters, read from counts when
// scraped, as parley_cache_hits_total and parley_cache_misses_total with the
// cache's name as label (e.g. "link").
func RegisterCache(m *Metrics, name string, counts func() CacheCounts) {
	m.reg.MustRegister(&cacheCollector{name: name, counts: counts})
}

var (
	descCacheHits   = prometheus.NewDesc("parley_cache_hits_total", "Read cache lookups answered from the cache.", []string{"cache"}, nil)
	descCacheMisses = prometheus.NewDesc("parley_cache_misses_total", "Read cache lookups that missed.", []string{"cache"}, nil)
)

type cacheCollector struct {
	name   string
	counts func() CacheCounts
}

// Describe implements prometheus.Collector.
func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCacheHits
	ch <- descCacheMisses
}

// Collect implements prometheus.Collector.
func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.counts()
	ch <- prometheus.MustNewConstMetric(descCacheHits, prometheus.CounterValue, float64(n.Hits), c.name)
	ch <- prometheus.MustNewConstMetric(descCacheMisses, prometheus.CounterValue, float64(n.Misses), c.name)
}
