package partition

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/kv"
	"github.com/parley-chat/parley/internal/poll"
)

// recorder is a kv.Watcher that keeps what it is handed.
type recorder struct {
	mu     sync.Mutex
	ready  map[uint64]uint64
	events []kv.Event
	pos    map[uint64]uint64
}

func (r *recorder) Ready(pos map[uint64]uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ready = pos
	return nil
}

func (r *recorder) Events(_ uint64, events []kv.Event, pos map[uint64]uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, events...)
	r.pos = pos
	return nil
}

func (r *recorder) snapshot() ([]kv.Event, map[uint64]uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kv.Event(nil), r.events...), r.ready
}

// A watch on the node holding the partition's replica (woken by the
// Notifier) and one on a node without it (polling the replica node) both
// get every matching put of the prefix once, in revision order, from the
// position they started at; a watch resumed from revision 0 gets them all.
func TestKVFeeds_Watch(t *testing.T) {
	notes := NewNotifier(func(uint64) bool { return true })
	n1 := newTestNodeWith(t, "n1", true, nil, StateMachine(notes), notes.Applied)
	n2 := newTestNode(t, "n2", false, &loopback{server: n1.server})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	put := func(key, value string) {
		t.Helper()
		if _, err := n1.router.Propose(ctx, 1, "", kv.EncodePut(kv.Put{Key: key, Value: []byte(value)})); err != nil {
			t.Fatal(err)
		}
	}
	put("app/0", "before")
	feeds := map[string]*KVFeeds{"local": NewKVFeeds(ctx, n1.router, notes), "upstream": NewKVFeeds(ctx, n2.router, NewNotifier(func(uint64) bool { return false }))}
	recs := map[string]*recorder{}
	var wg sync.WaitGroup
	for name, f := range feeds {
		rec := &recorder{}
		recs[name] = rec
		wg.Go(func() { _ = f.Watch(ctx, []uint64{1}, kv.Match{Prefix: "app/"}, nil, rec) })
		poll.Until(t, 10*time.Second, name+" ready", func() error {
			if _, ready := rec.snapshot(); ready == nil {
				return fmt.Errorf("not yet")
			}
			return nil
		})
	}
	from0 := &recorder{}
	wg.Go(func() {
		_ = feeds["upstream"].Watch(ctx, []uint64{1}, kv.Match{Prefix: "app/"}, map[uint64]uint64{1: 0}, from0)
	})
	var want []string
	for i := 1; i <= 60; i++ {
		key := fmt.Sprintf("app/%d", i%7)
		if i%5 == 0 {
			key = fmt.Sprintf("other/%d", i)
		} else {
			want = append(want, key+"="+fmt.Sprint(i))
		}
		put(key, fmt.Sprint(i))
	}
	check := func(name string, rec *recorder, want []string) {
		t.Helper()
		poll.Until(t, 20*time.Second, name+" has every put", func() error {
			evs, _ := rec.snapshot()
			if len(evs) < len(want) {
				return fmt.Errorf("%d of %d", len(evs), len(want))
			}
			return nil
		})
		evs, _ := rec.snapshot()
		if len(evs) != len(want) {
			t.Fatalf("%s got %d events, want %d", name, len(evs), len(want))
		}
		for i, e := range evs {
			if got := e.Key + "=" + string(e.Value); got != want[i] || (i > 0 && e.Revision <= evs[i-1].Revision) {
				t.Fatalf("%s event %d = %s at revision %d, want %s in revision order", name, i, got, e.Revision, want[i])
			}
		}
	}
	check("local", recs["local"], want)
	check("upstream", recs["upstream"], want)
	check("resumed from 0", from0, append([]string{"app/0=before"}, want...))
	cancel()
	wg.Wait()
	for _, f := range feeds {
		f.Close()
	}
}
