package node

import (
	"syscall"

	"github.com/parley-chat/parley/internal/connlimit"
	"github.com/parley-chat/parley/internal/metrics"
)

// newConnLimiter makes the limiter the node's client listeners share:
// --limit-conns-per-address (-1 or 0: none), and --limit-conns or, when it
// is 0, three quarters of the open-file limit (the rest is the store's, the
// cluster port's and the outgoing calls'); -1 sets no total cap.
func (n *Node) newConnLimiter() *connlimit.Limiter {
	total, perAddress := n.cfg.MaxConns, max(n.cfg.ConnsPerAddress, 0)
	switch total {
	case 0:
		total = defaultMaxConns()
	case -1:
		total = 0 // connlimit's "no cap"
	}
	return connlimit.New(connlimit.Limits{PerAddress: perAddress, Total: total}, n.log)
}

// defaultMaxConns is three quarters of the process's open-file limit (Go
// raises the soft limit to the hard one at start), at least 64; 0 (no
// cap) when the limit cannot be read or is unlimited.
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 { // unlimited reads as all ones
		return 0
	}
	return max(int(rl.Cur/4*3), 64)
}

// connStats reads the client connections' figures for /metrics.
func (n *Node) connStats() metrics.ConnStats {
	s := n.conns.Stats()
	return metrics.ConnStats{Open: s.Open, Limit: n.conns.Limits().Total, RefusedPerAddress: s.RefusedPerAddress, RefusedTotal: s.RefusedTotal}
}
