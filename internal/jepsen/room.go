package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/parley-chat/parley/client"
)

// Room posts unique texts to one room through random nodes, each post with
// its own idempotency key retried on other nodes. Its checker reads the
// whole history from every node: every acknowledged post present at the
// seq it was acknowledged with, none twice, seqs without a gap, every
// node's history the same.
type Room struct {
	runner
	nodes []*client.Client
	room  string

	acked   map[string]uint64 // text -> acknowledged seq
	unknown int
}

// NewRoom creates room name through nodes[0] and returns its workload.
func NewRoom(nodes []*client.Client, name string) (*Room, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := nodes[0].CreateRoom(ctx, client.RoomSpec{Name: name}); err != nil {
		return nil, fmt.Errorf("create room %s: %w", name, err)
	}
	return &Room{runner: newRunner(), nodes: nodes, room: name, acked: map[string]uint64{}}, nil
}

// Name implements Workload.
func (w *Room) Name() string { return "room history" }

// Start implements Workload.
func (w *Room) Start(n int) { w.run(n, w.post) }

// post posts one unique text.
func (w *Room) post(cl, i int, rng *rand.Rand) {
	text := fmt.Sprintf("%s c%d-%d", w.room, cl, i)
	first := rng.IntN(len(w.nodes))
	var res client.PostResult
	outcome, _ := retry(func(ctx context.Context, attempt int) error {
		var err error
		res, err = w.nodes[(first+attempt)%len(w.nodes)].Post(client.WithIdempotencyKey(ctx, text), w.room, text, client.PostOptions{})
		return err
	})
	w.mu.Lock()
	w.ops++
	switch outcome {
	case Acked:
		w.acked[text] = res.Seq
	case Unknown:
		w.unknown++
	}
	w.mu.Unlock()
}

// Check implements Workload: the history read through every node.
func (w *Room) Check(_ *client.Client, _ string, r *Result) error {
	r.Workload, r.Linearizable = w.Name(), "n/a"
	r.Ops, r.Acked, r.Unknown = w.ops, len(w.acked), w.unknown
	var first []client.Event
	for i, c := range w.nodes {
		events, err := w.history(c)
		if err != nil {
			return fmt.Errorf("history through node %d: %w", i+1, err)
		}
		lost, dup, gaps, moved := w.audit(events)
		r.Lost, r.Duplicated = max(r.Lost, lost), max(r.Duplicated, dup)
		if gaps > 0 || moved > 0 {
			r.Lost = max(r.Lost, 1)
			r.Detail += fmt.Sprintf(" node %d: %d seq gaps, %d posts at another seq than acknowledged;", i+1, gaps, moved)
		}
		if i == 0 {
			first = events
		} else if !slices.EqualFunc(first, events, sameEvent) {
			r.Lost = max(r.Lost, 1)
			r.Detail += fmt.Sprintf(" node %d's history differs from node 1's;", i+1)
		}
	}
	r.Detail += fmt.Sprintf(" %d events, gap-free and identical on %d nodes", len(first), len(w.nodes))
	return nil
}

// history reads the room's whole history through c, page by page.
func (w *Room) history(c *client.Client) ([]client.Event, error) {
	var all []client.Event
	after := uint64(0)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		page, err := c.History(ctx, w.room, client.HistoryOptions{After: after, HasAfter: true, Limit: 500})
		cancel()
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return all, nil
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
}

// audit counts acknowledged posts missing, texts present twice, gaps in the
// seqs and posts found at another seq than the one acknowledged.
func (w *Room) audit(events []client.Event) (lost, dup, gaps, moved int) {
	seen := map[string]uint64{}
	for i, e := range events {
		if i > 0 && e.Seq != events[i-1].Seq+1 {
			gaps++
		}
		if e.Kind != "message" {
			continue
		}
		if _, ok := seen[e.Text]; ok {
			dup++
		}
		seen[e.Text] = e.Seq
	}
	for text, seq := range w.acked {
		got, ok := seen[text]
		switch {
		case !ok:
			lost++
		case got != seq:
			moved++
		}
	}
	return lost, dup, gaps, moved
}

// sameEvent compares two events field by field.
func sameEvent(a, b client.Event) bool {
	return a.Seq == b.Seq && a.Ts == b.Ts && a.Kind == b.Kind && a.Sender == b.Sender && a.Text == b.Text
}
