package audit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// memStore is a Store in memory; err, when set, fails every Append.
type memStore struct {
	mu   sync.Mutex
	recs [][]byte
	err  error
}

func (m *memStore) Append(recs [][]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	for _, r := range recs {
		m.recs = append(m.recs, slices.Clone(r))
	}
	return nil
}

func (m *memStore) Newest(fn func([]byte) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.recs) - 1; i >= 0 && fn(m.recs[i]); i-- {
	}
	return nil
}

func (m *memStore) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs)
}

// at returns the time of second s of a fixed day.
func at(s int) time.Time { return time.Date(2026, 11, 3, 10, 0, s, 0, time.UTC) }

// run attaches s to l, starts l.Run and returns a function that stops it
// and waits.
func run(l *Log, s Store) (stop func()) {
	l.Attach(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// waitSaved waits until s holds n records.
func waitSaved(t *testing.T, s *memStore, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.len() < n {
		if time.Now().After(deadline) {
			t.Fatalf("store holds %d records, want %d", s.len(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustQuery(t *testing.T, l *Log, f Filter) []Event {
	t.Helper()
	evs, err := l.Query(f)
	if err != nil {
		t.Fatalf("Query(%+v): %v", f, err)
	}
	return evs
}

func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind+"/"+e.Actor)
	}
	return out
}

func TestLog_Record(t *testing.T) {
	t.Run("defaults, bounds and the log line", func(t *testing.T) {
		var buf bytes.Buffer
		l := NewLog("n1", slog.New(slog.NewTextHandler(&buf, nil)))
		l.Record(Event{Kind: KindLogin, Actor: "alice\x1b[2J" + strings.Repeat("x", 500) + "\xff"})
		l.Record(Event{Kind: KindLogin, Outcome: Refused, Node: "n9", Time: at(1)})
		evs := l.List()
		if len(evs) != 2 {
			t.Fatalf("List = %d events, want 2", len(evs))
		}
		if e := evs[0]; e.Node != "n1" || e.Outcome != OK || e.Time.IsZero() || len(e.Actor) > maxActor || e.Time.Location() != time.UTC {
			t.Fatalf("defaults not filled or bounds not applied: %+v", e)
		}
		if e := evs[1]; e.Node != "n9" || !e.Time.Equal(at(1)) {
			t.Fatalf("given fields changed: %+v", e)
		}
		out := buf.String()
		if !strings.Contains(out, "level=INFO msg=audit kind=login outcome=ok") || !strings.Contains(out, "level=WARN msg=audit kind=login outcome=refused") {
			t.Fatalf("log lines:\n%s", out)
		}
	})
	t.Run("the ring keeps the newest", func(t *testing.T) {
		l := NewLog("n1", nil)
		for i := range Capacity + 10 {
			l.Record(Event{Kind: "k", Time: at(i)})
		}
		evs := l.List()
		if len(evs) != Capacity || !evs[0].Time.Equal(at(10)) || !evs[Capacity-1].Time.Equal(at(Capacity+9)) {
			t.Fatalf("ring = %d events from %v to %v", len(evs), evs[0].Time, evs[len(evs)-1].Time)
		}
	})
	t.Run("never blocks; counts what the queue cannot take", func(t *testing.T) {
		l := NewLog("n1", nil) // no writer: the queue fills
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range queueSize + 5 {
				l.Record(Event{Kind: "k"})
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Record blocked")
		}
		if l.Dropped() != 5 {
			t.Fatalf("Dropped = %d, want 5", l.Dropped())
		}
	})
}

func TestLog_Run(t *testing.T) {
	t.Run("saves, and a new log reads what the old one saved", func(t *testing.T) {
		s := &memStore{}
		l := NewLog("n1", nil)
		l.Record(Event{Kind: KindLogin, Actor: "early", Time: at(1)}) // before Run: queued
		stop := run(l, s)
		l.Record(Event{Kind: KindLogin, Actor: "bob", Time: at(2)})
		l.Record(Event{Kind: KindAdmin, Actor: "root", Time: at(3)})
		waitSaved(t, s, 3)
		if got := kinds(mustQuery(t, l, Filter{})); !slices.Equal(got, []string{"login/early", "login/bob", "admin_action/root"}) {
			t.Fatalf("ring and store not merged once: %q", got)
		}
		l.Record(Event{Kind: KindLogin, Actor: "late", Time: at(4)})
		stop() // saves what is queued
		if s.len() != 4 {
			t.Fatalf("store holds %d after stop, want 4", s.len())
		}

		restarted := NewLog("n1", nil)
		stop = run(restarted, s)
		defer stop()
		restarted.Record(Event{Kind: KindLogin, Actor: "new", Time: at(5)})
		if got := kinds(mustQuery(t, restarted, Filter{Kind: KindLogin})); !slices.Equal(got, []string{"login/early", "login/bob", "login/late", "login/new"}) {
			t.Fatalf("after restart: %q", got)
		}
		if got := kinds(mustQuery(t, restarted, Filter{Limit: 2})); !slices.Equal(got, []string{"login/late", "login/new"}) {
			t.Fatalf("limit 2: %q", got)
		}
	})
	t.Run("a failing store counts drops", func(t *testing.T) {
		var buf bytes.Buffer
		s := &memStore{err: errors.New("disk full")}
		l := NewLog("n1", slog.New(slog.NewTextHandler(&buf, nil)))
		stop := run(l, s)
		l.Record(Event{Kind: "k"})
		stop()
		if l.Dropped() != 1 || !strings.Contains(buf.String(), "audit events not saved") {
			t.Fatalf("Dropped = %d; log:\n%s", l.Dropped(), buf.String())
		}
		if len(l.List()) != 1 {
			t.Fatal("the ring lost the event")
		}
	})
}

func TestFilter_Match(t *testing.T) {
	e := Event{Time: at(10), Kind: KindLogin, Actor: "Alice"}
	for _, tc := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"empty", Filter{}, true},
		{"kind", Filter{Kind: KindLogin}, true},
		{"other kind", Filter{Kind: KindAdmin}, false},
		{"actor ignores case", Filter{Actor: "alice"}, true},
		{"other actor", Filter{Actor: "bob"}, false},
		{"since before", Filter{Since: at(9)}, true},
		{"since equal", Filter{Since: at(10)}, true},
		{"since after", Filter{Since: at(11)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Match(e); got != tc.want {
				t.Fatalf("Match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilter_Normalized(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, DefaultLimit}, {-1, DefaultLimit}, {5, 5}, {MaxLimit + 1, MaxLimit}} {
		if got := (Filter{Limit: tc.in}).Normalized().Limit; got != tc.want {
			t.Errorf("limit %d -> %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestMerge(t *testing.T) {
	a := Event{Time: at(1), Node: "n1", Kind: "k"}
	b := Event{Time: at(2), Node: "n2", Kind: "k"}
	c := Event{Time: at(2), Node: "n3", Kind: "k"}
	local := a
	local.Time = at(1).Local() // same instant, another location
	got := Merge([]Event{c, a, b, local, c}, 0)
	if len(got) != 3 || got[0].Node != "n1" || got[1].Node != "n2" || got[2].Node != "n3" {
		t.Fatalf("Merge = %+v", got)
	}
	if got := Merge([]Event{c, a, b}, 2); len(got) != 2 || got[0].Node != "n2" {
		t.Fatalf("Merge limit 2 = %+v", got)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: never cut inside it
		{"a\xffb", 10, "a\uFFFDb"},
	} {
		if got := clip(tc.in, tc.n); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
