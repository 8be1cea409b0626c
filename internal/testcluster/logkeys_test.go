package testcluster_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/testcluster"
)

// keyLog is a slog.Handler that keeps, for every line, the keys it
// carries: those of the attributes its logger was made With, then the
// line's own.
type keyLog struct {
	with  []string
	mu    *sync.Mutex
	lines *[]loggedLine
}

// loggedLine is one line's message and keys.
type loggedLine struct {
	msg  string
	keys []string
}

func (h *keyLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *keyLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.with = slices.Clone(h.with)
	for _, a := range as {
		c.with = append(c.with, a.Key)
	}
	return &c
}

func (h *keyLog) WithGroup(string) slog.Handler { return h }

func (h *keyLog) Handle(_ context.Context, r slog.Record) error {
	l := loggedLine{msg: r.Message, keys: slices.Clone(h.with)}
	r.Attrs(func(a slog.Attr) bool { l.keys = append(l.keys, a.Key); return true })
	h.mu.Lock()
	*h.lines = append(*h.lines, l)
	h.mu.Unlock()
	return nil
}

// TestCluster_LogKeysOnce runs a 3-node cluster as it forms - gossip, the
// engine, placement moving replicas onto the joining nodes - with a logger
// per node carrying node=, as serve's does, and checks that no line repeats
// a key (node=n2 node=n2).
func TestCluster_LogKeysOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	var mu sync.Mutex
	var lines []loggedLine
	c := testcluster.New(t, testcluster.Options{Nodes: 3, Partitions: 4, NoSync: true, Logger: func(string) *slog.Logger {
		return slog.New(&keyLog{mu: &mu, lines: &lines})
	}})
	c.WaitConverged(60 * time.Second)
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	steps := 0
	for _, l := range lines {
		seen := map[string]bool{}
		for _, k := range l.keys {
			if seen[k] {
				t.Errorf("%q repeats %s: keys %s", l.msg, k, strings.Join(l.keys, " "))
				break
			}
			seen[k] = true
		}
		if l.msg == "placement changed" {
			steps++
		}
	}
	if len(lines) == 0 || steps == 0 {
		t.Errorf("%d lines, %d of them placement steps: the test saw too little to judge", len(lines), steps)
	}
}
