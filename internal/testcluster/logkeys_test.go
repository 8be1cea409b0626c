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

// keyLog is a slog.Handler that keeps every line with the attributes its
// logger was made With, to judge their keys after the run.
type keyLog struct {
	with  []slog.Attr
	mu    *sync.Mutex
	lines *[]loggedLine
}

// loggedLine is one line as logged, with its logger's attributes.
type loggedLine struct {
	rec  slog.Record
	with []slog.Attr
}

// keys are the line's keys: its logger's, then its own.
func (l loggedLine) keys() []string {
	var out []string
	for _, a := range l.with {
		out = append(out, a.Key)
	}
	l.rec.Attrs(func(a slog.Attr) bool { out = append(out, a.Key); return true })
	return out
}

// text is the line as key=value text, for a failure's report.
func (l loggedLine) text() string {
	out := []string{l.rec.Time.Format("15:04:05.000"), l.rec.Message}
	for _, a := range l.with {
		out = append(out, a.String())
	}
	l.rec.Attrs(func(a slog.Attr) bool { out = append(out, a.String()); return true })
	return strings.Join(out, " ")
}

func (h *keyLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *keyLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.with = append(slices.Clone(h.with), as...)
	return &c
}

func (h *keyLog) WithGroup(string) slog.Handler { return h }

func (h *keyLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	*h.lines = append(*h.lines, loggedLine{rec: r.Clone(), with: h.with})
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
	t.Cleanup(func() {
		// The cluster's own lines are this test's only record of how it
		// formed: on a failure (one did not converge in CI), show the
		// placement and membership ones.
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, l := range lines {
			if msg := l.rec.Message; strings.Contains(msg, "placement") || strings.Contains(msg, "configuration") || strings.Contains(msg, "member") || strings.Contains(msg, "join") {
				t.Log(l.text())
			}
		}
	})
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
		keys := l.keys()
		for _, k := range keys {
			if seen[k] {
				t.Errorf("%q repeats %s: keys %s", l.rec.Message, k, strings.Join(keys, " "))
				break
			}
			seen[k] = true
		}
		if l.rec.Message == "placement changed" {
			steps++
		}
	}
	if len(lines) == 0 || steps == 0 {
		t.Errorf("%d lines, %d of them placement steps: the test saw too little to judge", len(lines), steps)
	}
}
