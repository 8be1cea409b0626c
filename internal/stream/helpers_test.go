package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/errs"
)

// memSource is a Source over in-memory room logs, the way a node's replica
// state would answer: events up to readable are visible to EventsAfter.
type memSource struct {
	mu       sync.Mutex
	logs     map[string][]chat.Event // room -> events, seq i+1 at index i
	readable map[string]uint64       // room -> highest seq EventsAfter shows (lag), 0 = all
	first    map[string]uint64       // room -> first retained seq (compaction)
	watched  map[string]int          // room -> Watch calls minus Unwatch calls
	page     int                     // most events per answer, 0 = limit
}

func newMemSource() *memSource {
	return &memSource{logs: map[string][]chat.Event{}, readable: map[string]uint64{}, first: map[string]uint64{}, watched: map[string]int{}}
}

func (m *memSource) Watch(room string)   { m.mu.Lock(); m.watched[room]++; m.mu.Unlock() }
func (m *memSource) Unwatch(room string) { m.mu.Lock(); m.watched[room]--; m.mu.Unlock() }

func (m *memSource) watching(room string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.watched[room]
}

// append adds n message events to room's log and returns them.
func (m *memSource) append(room string, n int) []chat.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chat.Event
	for range n {
		seq := uint64(len(m.logs[room]) + 1)
		e := chat.Event{Room: room, Seq: seq, Ts: int64(seq), Kind: chat.KindMessage, Sender: "alice", Text: fmt.Sprintf("m%d", seq)}
		m.logs[room] = append(m.logs[room], e)
		out = append(out, e)
	}
	return out
}

// appendEvent adds e (its seq assigned) to room's log.
func (m *memSource) appendEvent(room string, e chat.Event) chat.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.Room, e.Seq = room, uint64(len(m.logs[room])+1)
	m.logs[room] = append(m.logs[room], e)
	return e
}

func (m *memSource) EventsAfter(_ context.Context, room string, after uint64, limit int) ([]chat.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	log, ok := m.logs[room]
	if !ok {
		return nil, errs.New(errs.NotFound, "room %q not found", room)
	}
	if f := m.first[room]; f > 0 && after+1 < f {
		return nil, &errs.Error{Code: chat.CodeHistoryCompacted, Message: "compacted"}
	}
	hi := uint64(len(log))
	if r := m.readable[room]; r > 0 {
		hi = min(hi, r)
	}
	if m.page > 0 {
		limit = min(limit, m.page)
	}
	var out []chat.Event
	for seq := after + 1; seq <= hi && len(out) < limit; seq++ {
		out = append(out, log[seq-1])
	}
	return out, nil
}

// frame is a decoded server frame.
type frame struct {
	Type    string   `json:"type"`
	Room    string   `json:"room"`
	Seq     uint64   `json:"seq"`
	Kind    string   `json:"kind"`
	Sender  string   `json:"sender"`
	Text    string   `json:"text"`
	To      []string `json:"to"`
	Code    string   `json:"code"`
	Message string   `json:"message"`
}

func (f frame) String() string {
	switch f.Type {
	case TypeEvent:
		return fmt.Sprintf("%s#%d:%s", f.Room, f.Seq, f.Kind)
	case TypeReady:
		return fmt.Sprintf("ready(%s,%d)", f.Room, f.Seq)
	}
	return fmt.Sprintf("%s(%s,%s)", f.Type, f.Room, f.Code)
}

// collector drains a subscriber on its own goroutine.
type collector struct {
	mu     sync.Mutex
	frames []frame
	raw    [][]byte
	err    error
	done   chan struct{}
}

func collect(t *testing.T, s *Subscriber) *collector {
	t.Helper()
	c := &collector{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		var buf [][]byte
		for {
			var err error
			buf, err = s.Next(context.Background(), buf)
			c.mu.Lock()
			for _, b := range buf {
				var f frame
				if jerr := json.Unmarshal(b, &f); jerr != nil {
					c.err = jerr
				}
				c.frames = append(c.frames, f)
				c.raw = append(c.raw, b)
			}
			if err != nil {
				c.err = err
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// snapshot returns the frames received so far.
func (c *collector) snapshot() ([]frame, [][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]frame(nil), c.frames...), append([][]byte(nil), c.raw...), c.err
}

// waitFor polls until the collector has at least n frames.
func (c *collector) waitFor(t *testing.T, n int) []frame {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fs, _, _ := c.snapshot()
		if len(fs) >= n {
			return fs
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d frames %v, want %d", len(fs), fs, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkRun checks that frames are ready(room, readyAt) somewhere and events
// of room with seqs from..to exactly once, in order, and nothing else.
func checkEvents(t *testing.T, fs []frame, room string, from, to uint64) {
	t.Helper()
	want := from
	for _, f := range fs {
		if f.Type != TypeEvent || f.Room != room {
			continue
		}
		if f.Seq != want {
			t.Fatalf("event %s where seq %d was due; frames %v", f, want, fs)
		}
		want++
	}
	if want != to+1 {
		t.Fatalf("events up to %d, want up to %d; frames %v", want-1, to, fs)
	}
}

// readyAt returns the seq of the only ready frame of room and its index.
func readyAt(t *testing.T, fs []frame, room string) (seq uint64, index int) {
	t.Helper()
	index = -1
	for i, f := range fs {
		if f.Type == TypeReady && f.Room == room {
			if index >= 0 {
				t.Fatalf("two ready frames: %v", fs)
			}
			seq, index = f.Seq, i
		}
	}
	if index < 0 {
		t.Fatalf("no ready frame for %s: %v", room, fs)
	}
	return seq, index
}

func newTestHub(t *testing.T, src *memSource, cfg Config) *Hub {
	t.Helper()
	cfg.Source = src
	if cfg.Retry == 0 {
		cfg.Retry = time.Millisecond
	}
	h := NewHub(cfg)
	t.Cleanup(h.Close)
	return h
}
