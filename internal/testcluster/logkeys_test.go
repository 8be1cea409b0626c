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
	with     []string
	withText []string // the same attributes as key=value
	mu       *sync.Mutex
	lines    *[]loggedLine
}

// loggedLine is one line's message and keys, and the line as text.
type loggedLine struct {
	msg  string
	keys []string
	text string
}

func (h *keyLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *keyLog) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.with, c.withText = slices.Clone(h.with), slices.Clone(h.withText)
	for _, a := range as {
		c.with = append(c.with, a.Key)
		c.withText = append(c.withText, a.String())
	}
	return &c
}

func (h *keyLog) WithGroup(string) slog.Handler { return h }

func (h *keyLog) Handle(_ context.Context, r slog.Record) error {
	l := loggedLine{msg: r.Message, keys: slices.Clone(h.with)}
	text := append([]string{r.Time.Format("15:04:05.000"), r.Message}, h.withText...)
	r.Attrs(func(a slog.Attr) bool {
		l.keys = append(l.keys, a.Key)
		text = append(text, a.String())
		return true
	})
	l.text = strings.Join(text, " ")
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
			if strings.Contains(l.msg, "placement") || strings.Contains(l.msg, "configuration") || strings.Contains(l.msg, "member") || strings.Contains(l.msg, "join") {
				t.Log(l.text)
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
