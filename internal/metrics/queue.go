package metrics

import "github.com/prometheus/client_golang/prometheus"

// QueueStats are one queue's figures, as the leader of its partition reads
// them.
type QueueStats struct {
	Queue                           string
	Ready, Leased, Delayed, Waiting uint64
	// DeadLetters counts the stored messages that arrived as dead letters.
	DeadLetters uint64
	// DeadLettered, Dropped and Expired count since the queue's creation.
	DeadLettered, Dropped, Expired uint64
	// Moving counts messages on their way to another queue.
	Moving uint64
	// OldestAgeSeconds is the age of the oldest stored message, 0 when none.
	OldestAgeSeconds float64
}

var (
	descQueueMessages = prometheus.NewDesc("parley_queue_messages", "Stored queue messages by state (ready, leased, delayed, waiting) and dead letters held.", []string{"queue", "state"}, nil)
	descQueueDeadOut  = prometheus.NewDesc("parley_queue_dead_lettered_total", "Messages a queue sent to its dead-letter queue.", []string{"queue"}, nil)
	descQueueDropped  = prometheus.NewDesc("parley_queue_dropped_total", "Messages a queue dropped (limits without a dead-letter queue).", []string{"queue"}, nil)
	descQueueExpired  = prometheus.NewDesc("parley_queue_expired_total", "Messages whose TTL ran out.", []string{"queue"}, nil)
	descQueueMoving   = prometheus.NewDesc("parley_queue_moving", "Messages on their way from a queue to another (dead letters, redrives).", []string{"queue"}, nil)
	descQueueOldest   = prometheus.NewDesc("parley_queue_oldest_message_age_seconds", "Age of a queue's oldest stored message.", []string{"queue"}, nil)
)

// queueCollector reads QueueStats at scrape time.
type queueCollector struct{ stats func() []QueueStats }

// Describe implements prometheus.Collector.
func (c queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descQueueMessages, descQueueDeadOut, descQueueDropped, descQueueExpired, descQueueMoving, descQueueOldest} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.stats() {
		for _, st := range []struct {
			state string
			n     uint64
		}{{"ready", s.Ready}, {"leased", s.Leased}, {"delayed", s.Delayed}, {"waiting", s.Waiting}, {"dead_letter", s.DeadLetters}} {
			ch <- prometheus.MustNewConstMetric(descQueueMessages, prometheus.GaugeValue, float64(st.n), s.Queue, st.state)
		}
		ch <- prometheus.MustNewConstMetric(descQueueDeadOut, prometheus.CounterValue, float64(s.DeadLettered), s.Queue)
		ch <- prometheus.MustNewConstMetric(descQueueDropped, prometheus.CounterValue, float64(s.Dropped), s.Queue)
		ch <- prometheus.MustNewConstMetric(descQueueExpired, prometheus.CounterValue, float64(s.Expired), s.Queue)
		ch <- prometheus.MustNewConstMetric(descQueueMoving, prometheus.GaugeValue, float64(s.Moving), s.Queue)
		ch <- prometheus.MustNewConstMetric(descQueueOldest, prometheus.GaugeValue, s.OldestAgeSeconds, s.Queue)
	}
}

// RegisterQueues adds the per-queue metrics, read from stats when scraped:
// each node reports the queues of the partitions it leads, so that the
// cluster's series add up without duplicates. Call it once.
func (m *Metrics) RegisterQueues(stats func() []QueueStats) {
	m.reg.MustRegister(queueCollector{stats: stats})
}
