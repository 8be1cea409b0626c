package node

import (
	"log/slog"
	"testing"

	"github.com/parley-chat/parley/internal/config"
)

// --limit-conns: 0 is three quarters of the open-file limit, -1 no cap,
// and any other count that count.
func TestNewConnLimiter_TotalCap(t *testing.T) {
	for maxConns, want := range map[int]int{0: defaultMaxConns(), -1: 0, 100: 100} {
		n := &Node{cfg: config.Config{MaxConns: maxConns, ConnsPerAddress: 7}, log: slog.New(slog.DiscardHandler)}
		l := n.newConnLimiter().Limits()
		if l.Total != want || l.PerAddress != 7 {
			t.Errorf("--limit-conns %d: limits %+v, want a total of %d and 7 per address", maxConns, l, want)
		}
	}
	for perAddress, want := range map[int]int{-1: 0, 0: 0, 5: 5} {
		n := &Node{cfg: config.Config{MaxConns: 100, ConnsPerAddress: perAddress}, log: slog.New(slog.DiscardHandler)}
		if l := n.newConnLimiter().Limits(); l.PerAddress != want || l.Total != 100 {
			t.Errorf("--limit-conns-per-address %d: limits %+v, want %d per address (0: none)", perAddress, l, want)
		}
	}
	if defaultMaxConns() == 0 {
		t.Log("the open-file limit is unlimited here: 0 also sets no cap")
	}
}
