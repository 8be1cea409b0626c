package membership

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// keyCheck is a slog.Handler that records every line on which a key
// appears twice, counting the attributes its logger was made With.
type keyCheck struct {
	keys  []string
	mu    *sync.Mutex
	lines *int
	dups  *[]string
}

func newKeyCheck() *keyCheck {
	return &keyCheck{mu: &sync.Mutex{}, lines: new(int), dups: new([]string)}
}

func (h *keyCheck) Enabled(context.Context, slog.Level) bool { return true }

func (h *keyCheck) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.keys = append(append([]string(nil), h.keys...), attrKeys(as)...)
	return &c
}

func (h *keyCheck) WithGroup(string) slog.Handler { return h }

func (h *keyCheck) Handle(_ context.Context, r slog.Record) error {
	keys := append([]string(nil), h.keys...)
	r.Attrs(func(a slog.Attr) bool { keys = append(keys, a.Key); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.lines++
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			*h.dups = append(*h.dups, r.Message+": "+k)
		}
		seen[k] = true
	}
	return nil
}

func attrKeys(as []slog.Attr) []string {
	var ks []string
	for _, a := range as {
		ks = append(ks, a.Key)
	}
	return ks
}

// TestMembership_LogKeysOnce gives the membership a logger that carries
// node=, as the node's does, and checks that no line repeats a key.
func TestMembership_LogKeysOnce(t *testing.T) {
	h := newKeyCheck()
	m, err := New(Config{
		NodeID: "n1", ClusterID: "c1", BindAddr: "127.0.0.1:0", Join: []string{"127.0.0.1:1"},
		Logger: slog.New(h).With("node", "n1"), TCPTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := m.Join(ctx); err == nil {
		t.Fatal("joined through a closed port")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if *h.lines == 0 {
		t.Fatal("no log line to check")
	}
	if len(*h.dups) > 0 {
		t.Errorf("log lines repeat a key: %q", *h.dups)
	}
}
