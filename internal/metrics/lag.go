package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ApplyLag is the histogram parley_replica_apply_lag_seconds: how long after
// the leader stamped a command it became visible on a local replica, by the
// replica's role when it applied it. A leader's figure is its commit
// latency; a follower's adds the propagation delay.
type ApplyLag struct {
	hist *prometheus.HistogramVec
}

// NewApplyLag registers the apply lag histogram in m.
func NewApplyLag(m *Metrics) *ApplyLag {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "parley_replica_apply_lag_seconds",
		Help:    "Time from the leader stamping a command to its apply on a local replica, by replica role.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16), // 0.5 ms .. 16 s
	}, []string{"role"})
	m.reg.MustRegister(h)
	return &ApplyLag{hist: h}
}

// Observe records one lag sample of a replica that is (or is not) its
// group's leader.
func (a *ApplyLag) Observe(leader bool, lag time.Duration) {
	role := "follower"
	if leader {
		role = "leader"
	}
	a.hist.WithLabelValues(role).Observe(lag.Seconds())
}
