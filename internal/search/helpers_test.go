package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/password/passwordtest"
	"github.com/parley-chat/parley/internal/state"
	"github.com/parley-chat/parley/internal/state/statetest"
)

// world is a chat service over an in-memory replicator of three partitions,
// with the search indexes of its replicas, synced by hand (syncIndexes) so
// tests are deterministic.
type world struct {
	t  testing.TB
	r  *statetest.Replicator
	s  *chat.Service
	x  *Indexes
	se *Searcher
}

func newWorld(t testing.TB, partitions int) *world {
	r := statetest.NewReplicator(partitions, chat.StateMachine{})
	w := &world{t: t, r: r, s: chat.NewService(r, chat.Config{Hasher: passwordtest.Hasher()})}
	w.x = NewIndexes(Config{Read: func(ctx context.Context, p uint64, fn func(state.Reader) error) error {
		_, err := r.Read(ctx, p, true, fn)
		return err
	}, Applied: r.Applied, Replicas: func() map[uint64]any {
		out := map[uint64]any{}
		for _, p := range r.Partitions() {
			out[p] = 0
		}
		return out
	}})
	w.se = NewSearcher(SearcherConfig{Local: w.x, Partitions: r.Partitions, ReplicaAddrs: func(uint64) []string { return nil }})
	return w
}

// syncIndexes brings every partition's index up to the state, as the
// indexers' sweeps do.
func (w *world) syncIndexes() {
	w.t.Helper()
	if err := w.x.Refresh(context.Background()); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) search(user, q string) []Result {
	w.t.Helper()
	page, err := w.se.Search(context.Background(), user, Request{Q: q, Limit: MaxLimit})
	if err != nil {
		w.t.Fatalf("search %q as %s: %v", q, user, err)
	}
	return page.Results
}

// must returns v, failing the test given to what it returns when err is set:
// must(f())(t).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// refs names results as room/seq, sorted.
func refs(rs []Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s/%d", r.Room, r.Seq)
	}
	slices.Sort(out)
	return out
}

// bruteForce is the reference: every message user may read through the
// history routes (chat.Service.History: whispers to others come hidden,
// private rooms refused to non-members), matched word by word.
func (w *world) bruteForce(user string, rooms []string, spec Spec) []string {
	w.t.Helper()
	var out []string
	for _, room := range rooms {
		evs, err := w.allHistory(user, room)
		if err != nil {
			continue // not readable (private, deleted)
		}
		for _, e := range evs {
			if (e.Kind == chat.KindMessage || e.Kind == chat.KindWhisper) && !e.Deleted && matches(e, spec) {
				out = append(out, fmt.Sprintf("%s/%d", room, e.Seq))
			}
		}
	}
	slices.Sort(out)
	return out
}

func (w *world) allHistory(user, room string) ([]chat.Event, error) {
	var all []chat.Event
	var after uint64
	for {
		evs, _, err := w.s.History(context.Background(), user, room, chat.HistoryQuery{After: after, HasAfter: true, Limit: chat.MaxHistoryLimit}, true)
		if err != nil {
			if len(all) == 0 && after == 0 {
				// Retention may have removed the start: read from the
				// retained history.
				rm, _, rerr := w.s.Room(context.Background(), user, room, true)
				if rerr == nil && rm.FirstRetainedSeq > 1 && after < rm.FirstRetainedSeq-1 {
					after = rm.FirstRetainedSeq - 1
					continue
				}
			}
			return nil, err
		}
		if len(evs) == 0 {
			return all, nil
		}
		all = append(all, evs...)
		after = evs[len(evs)-1].Seq
	}
}

// matches is the query's meaning over one message, computed naively.
func matches(e chat.Event, spec Spec) bool {
	q := spec.Query
	words := strings.Fields(strings.ToLower(e.Text))
	for _, wd := range q.Words {
		if !slices.Contains(words, strings.ToLower(wd)) {
			return false
		}
	}
	for _, p := range q.Phrases {
		if !containsRun(words, strings.Fields(strings.ToLower(p))) {
			return false
		}
	}
	switch {
	case q.From != "" && strings.ToLower(e.Sender) != q.From,
		q.Room != "" && e.Room != q.Room,
		spec.After != 0 && e.Ts <= spec.After,
		spec.Before != 0 && e.Ts >= spec.Before:
		return false
	}
	return true
}

func containsRun(words, run []string) bool {
	for i := 0; i+len(run) <= len(words); i++ {
		if slices.Equal(words[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// vocabulary of the seeded corpus.
var vocabulary = strings.Fields(`apple banana cherry delta echo foxtrot golf hotel india juliet kilo lima
mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber basil
cedar dune ember fern grove harbor iris jade`)

func randomText(rng *rand.Rand) string {
	n := 2 + rng.IntN(7)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = vocabulary[rng.IntN(len(vocabulary))]
		if rng.IntN(5) == 0 {
			ws[i] = strings.ToUpper(ws[i][:1]) + ws[i][1:]
		}
	}
	return strings.Join(ws, " ")
}
