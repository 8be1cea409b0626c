package testcluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parley-chat/parley/client"
	"github.com/parley-chat/parley/internal/chat"
	"github.com/parley-chat/parley/internal/poll"
	"github.com/parley-chat/parley/internal/testcluster"
)

// streamReader drains a live stream on its own goroutine.
type streamReader struct {
	s      *client.Stream
	mu     sync.Mutex
	frames []client.Frame
	err    error
	done   chan struct{}
}

func readStream(t *testing.T, s *client.Stream) *streamReader {
	t.Helper()
	r := &streamReader{s: s, done: make(chan struct{})}
	t.Cleanup(func() { _ = s.Close(); <-r.done })
	go func() {
		defer close(r.done)
		for {
			f, err := s.Next(context.Background())
			r.mu.Lock()
			if err != nil {
				r.err = err
				r.mu.Unlock()
				return
			}
			r.frames = append(r.frames, f)
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *streamReader) snapshot() ([]client.Frame, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]client.Frame(nil), r.frames...), r.err
}

// openStream opens a stream through node i as cl's user.
func openStream(t *testing.T, c *testcluster.Cluster, i int, cl *client.Client, opts client.StreamOptions) *streamReader {
	t.Helper()
	s, err := as(c, i, cl).Stream(apiCtx(t), opts)
	if err != nil {
		t.Fatalf("open a stream on n%d: %v", i+1, err)
	}
	return readStream(t, s)
}

// waitReady waits for the stream's ready frame of room and returns its seq.
func (r *streamReader) waitReady(t *testing.T, room string) uint64 {
	t.Helper()
	var seq uint64
	poll.Until(t, 20*time.Second, "ready frame of "+room, func() error {
		fs, err := r.snapshot()
		for _, f := range fs {
			if f.Type == client.FrameReady && f.Room == room {
				seq = f.Seq
				return nil
			}
			if f.Type == client.FrameError {
				t.Fatalf("error frame %+v", f)
			}
		}
		if err != nil {
			return err
		}
		return testcluster.ErrNotYet
	})
	return seq
}

// waitSeq waits until the stream delivered room's event seq (or failed) and
// returns its frames.
func (r *streamReader) waitSeq(t *testing.T, room string, seq uint64) []client.Frame {
	t.Helper()
	var out []client.Frame
	poll.Until(t, 30*time.Second, fmt.Sprintf("event %d of %s", seq, room), func() error {
		fs, err := r.snapshot()
		for _, f := range fs {
			if f.Type == client.FrameEvent && f.Room == room && f.Seq >= seq {
				out = fs
				return nil
			}
		}
		if err != nil {
			t.Fatalf("stream ended before event %d: %v; frames %s", seq, err, fmtFrames(fs))
		}
		return testcluster.ErrNotYet
	})
	return out
}

// eventsOf returns room's events among frames.
func eventsOf(frames []client.Frame, room string) []client.Event {
	var out []client.Event
	for _, f := range frames {
		if f.Type == client.FrameEvent && f.Room == room {
			out = append(out, f.Event())
		}
	}
	return out
}

// mustRun checks that events are exactly seqs from..to in order.
func mustRun(t *testing.T, what string, events []client.Event, from, to uint64) {
	t.Helper()
	if uint64(len(events)) != to-from+1 {
		t.Fatalf("%s: %d events, want %d..%d: %s", what, len(events), from, to, fmtSeqs(events))
	}
	for i, e := range events {
		if e.Seq != from+uint64(i) {
			t.Fatalf("%s: event %d has seq %d, want %d: %s", what, i, e.Seq, from+uint64(i), fmtSeqs(events))
		}
	}
}

func fmtFrames(fs []client.Frame) string {
	s := ""
	for _, f := range fs {
		switch f.Type {
		case client.FrameEvent:
			s += fmt.Sprintf("%d:%s ", f.Seq, f.Kind)
		case client.FrameReady:
			s += fmt.Sprintf("ready(%d) ", f.Seq)
		default:
			s += fmt.Sprintf("%s(%s %s) ", f.Type, f.Code, f.Message)
		}
	}
	return s
}

// streamRoom sets up a room with alice (owner), bob and carol through the
// given nodes and returns their clients.
func streamRoom(t *testing.T, c *testcluster.Cluster, room string) (alice, bob, carol *client.Client) {
	t.Helper()
	ctx := apiCtx(t)
	n := c.Len()
	alice = signUp(t, c, 0, 0, "alice")
	bob = signUp(t, c, 1%n, 1%n, "bob")
	carol = signUp(t, c, n-1, n-1, "carol")
	if _, err := alice.CreateRoom(ctx, client.RoomSpec{Name: room}); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*client.Client{bob, carol} {
		if _, err := cl.JoinRoom(ctx, room, ""); err != nil {
			t.Fatal(err)
		}
	}
	return alice, bob, carol
}

// postMany posts count messages as cl through the nodes in turn, every
// fifth a whisper to bob, and returns the seqs of the whispers and the last.
func postMany(t *testing.T, c *testcluster.Cluster, cl *client.Client, room string, count int) (whispers map[uint64]bool, last uint64) {
	t.Helper()
	whispers = map[uint64]bool{}
	for i := range count {
		var opts client.PostOptions
		if i%5 == 4 {
			opts.To = []string{"bob"}
		}
		res, err := as(c, i%c.Len(), cl).Post(apiCtx(t), room, fmt.Sprintf("message %d", i), opts)
		if err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
		if len(opts.To) > 0 {
			whispers[res.Seq] = true
		}
		last = max(last, res.Seq)
	}
	return whispers, last
}

// Every subscriber, on every node (one of them without a replica of the
// room's partition in the 4-node shape), gets every event in seq order,
// none twice, none skipped, whispers hidden from everyone but their sender
// and recipients; a ready frame first; and can resume on another node.
func TestStream_Delivery(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		const room = "live"
		alice, bob, carol := streamRoom(t, c, room)
		if far := noReplica(c, room); far >= 0 {
			t.Logf("n%d holds no replica of %q: its subscribers use an upstream feed", far+1, room)
		}
		type watcher struct {
			who   string
			r     *streamReader
			ready uint64
		}
		var ws []*watcher
		for i := 0; i < c.Len(); i++ {
			ws = append(ws, &watcher{who: "carol", r: openStream(t, c, i, carol, client.StreamOptions{Rooms: []string{room}})})
			ws = append(ws, &watcher{who: "bob", r: openStream(t, c, i, bob, client.StreamOptions{Rooms: []string{room}, AuthFrame: true})})
		}
		for _, w := range ws {
			w.ready = w.r.waitReady(t, room)
		}
		whispers, last := postMany(t, c, alice, room, 40)
		for i, w := range ws {
			events := eventsOf(w.r.waitSeq(t, room, last), room)
			mustRun(t, fmt.Sprintf("%s on n%d", w.who, i/2+1), events, w.ready+1, last)
			for _, e := range events {
				switch {
				case whispers[e.Seq] && w.who == "carol" && (e.Kind != "hidden" || e.Text != "" || e.Sender != ""):
					t.Fatalf("carol saw whisper %d as %+v", e.Seq, e)
				case whispers[e.Seq] && w.who == "bob" && (e.Kind != "whisper" || e.Text == ""):
					t.Fatalf("bob saw his whisper %d as %+v", e.Seq, e)
				case !whispers[e.Seq] && e.Kind != "message":
					t.Fatalf("event %d is %+v", e.Seq, e)
				}
			}
		}

		t.Run("resume on another node", func(t *testing.T) {
			for i := 0; i < c.Len(); i++ {
				r := openStream(t, c, i, carol, client.StreamOptions{Resume: map[string]uint64{room: 10}})
				frames := r.waitSeq(t, room, last)
				mustRun(t, fmt.Sprintf("resumed on n%d", i+1), eventsOf(frames, room), 11, last)
				if got := r.waitReady(t, room); got < last {
					t.Fatalf("ready(%d) after a catch-up to %d", got, last)
				}
			}
		})
		t.Run("resume ahead of a lagging node is held", func(t *testing.T) {
			r := openStream(t, c, c.Len()-1, carol, client.StreamOptions{Resume: map[string]uint64{room: last}})
			if got := r.waitReady(t, room); got != last {
				t.Fatalf("ready(%d), want ready(%d)", got, last)
			}
			res, err := alice.Post(apiCtx(t), room, "one more", client.PostOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mustRun(t, "after a resume at the end", eventsOf(r.waitSeq(t, room, res.Seq), room), last+1, res.Seq)
		})
		t.Run("errors", func(t *testing.T) {
			ctx := apiCtx(t)
			if _, err := alice.CreateRoom(ctx, client.RoomSpec{Name: "vault", Private: true, Password: "open sesame"}); err != nil {
				t.Fatal(err)
			}
			s, err := as(c, c.Len()-1, carol).Stream(ctx, client.StreamOptions{Rooms: []string{"vault", "nowhere"}})
			if err != nil {
				t.Fatal(err)
			}
			r := readStream(t, s)
			poll.Until(t, 20*time.Second, "two error frames", func() error {
				fs, _ := r.snapshot()
				codes := map[string]string{}
				for _, f := range fs {
					if f.Type == client.FrameError {
						codes[f.Room] = f.Code
					}
				}
				if codes["vault"] == client.CodeForbidden && codes["nowhere"] == client.CodeNotFound {
					return nil
				}
				return fmt.Errorf("frames %s", fmtFrames(fs))
			})
		})
	})
}

// A subscriber whose node dies resumes on another node from the last seq it
// saw: nothing missing, nothing twice, while posts go on.
func TestStream_ResumeAfterNodeKilled(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		const room = "survivors"
		alice, _, carol := streamRoom(t, c, room)
		victim := c.Len() - 1 // not node 0, which the posts avoid
		if far := noReplica(c, room); far > 0 {
			victim = far
		}
		first := openStream(t, c, victim, carol, client.StreamOptions{Rooms: []string{room}})
		ready := first.waitReady(t, room)
		posted := make(chan uint64, 1)
		go func() {
			var last uint64
			defer func() { posted <- last }()
			for i := range 60 {
				node := 0
				if i%2 == 1 {
					node = 1 + (victim % (c.Len() - 1)) // another survivor
					if node == victim {
						node = 0
					}
				}
				res, err := as(c, node, alice).Post(apiCtx(t), room, fmt.Sprintf("m%d", i), client.PostOptions{})
				if err != nil {
					t.Errorf("post %d: %v", i, err)
					return
				}
				last = max(last, res.Seq)
			}
		}()
		first.waitSeq(t, room, ready+10)
		c.Kill(victim)
		<-first.done
		seen, _ := first.snapshot()
		pos := first.s.Positions()
		second := openStream(t, c, (victim+1)%c.Len(), carol, client.StreamOptions{Resume: pos})
		last := <-posted
		if t.Failed() {
			return
		}
		all := append(eventsOf(seen, room), eventsOf(second.waitSeq(t, room, last), room)...)
		mustRun(t, "across the kill", all, ready+1, last)
	})
}

// Subscribers keep a gap-free, duplicate-free order while the leader of the
// room's partition is killed and restarted and leadership moves.
func TestStream_LeadersMove(t *testing.T) {
	forEachShape(t, func(t *testing.T, c *testcluster.Cluster) {
		const room = "moving"
		alice, _, carol := streamRoom(t, c, room)
		p := c.Node(0).Router().PartitionOf(room)
		rs := make([]*streamReader, c.Len())
		seen := make([][]client.Event, c.Len()) // events of each node's earlier streams
		for i := range rs {
			rs[i] = openStream(t, c, i, carol, client.StreamOptions{Resume: map[string]uint64{room: 0}})
		}
		var last uint64
		post := func(node, count int) {
			for i := range count {
				res, err := as(c, node, alice).Post(apiCtx(t), room, fmt.Sprintf("m%d", i), client.PostOptions{})
				if err != nil {
					t.Fatalf("post: %v", err)
				}
				last = max(last, res.Seq)
			}
		}
		for round := range 3 {
			lead := c.LeaderOf(p)
			if lead < 0 {
				t.Fatal("no leader")
			}
			poster := (lead + 1) % c.Len()
			post(poster, 5)
			t.Logf("round %d: killing n%d, leader of partition %d", round, lead+1, p)
			c.Kill(lead)
			post(poster, 5)
			<-rs[lead].done
			fs, _ := rs[lead].snapshot()
			seen[lead] = append(seen[lead], eventsOf(fs, room)...)
			c.Restart(lead)
			post(poster, 5)
			rs[lead] = openStream(t, c, lead, carol, client.StreamOptions{Resume: rs[lead].s.Positions()})
		}
		for i, r := range rs {
			all := append(seen[i], eventsOf(r.waitSeq(t, room, last), room)...)
			mustRun(t, fmt.Sprintf("n%d's streams", i+1), all, 1, last)
		}
	})
}

// A resume from a seq older than the retained history gets
// history_compacted, never a silent gap.
func TestStream_HistoryCompacted(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	c := newAPICluster(t, 3, 3)
	const room = "fleeting"
	alice, _, carol := streamRoom(t, c, room)
	_, last := postMany(t, c, alice, room, 5)
	time.Sleep(20 * time.Millisecond) // the events become older than the retention below
	p := c.Node(0).Router().PartitionOf(room)
	if _, err := c.Node(0).Router().Propose(apiCtx(t), p, "", chat.EncodeCompact(chat.Compact{RetentionMs: 10})); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.Len(); i++ {
		r := openStream(t, c, i, carol, client.StreamOptions{Resume: map[string]uint64{room: 2}})
		poll.Until(t, 20*time.Second, "history_compacted", func() error {
			fs, _ := r.snapshot()
			for _, f := range fs {
				if f.Type == client.FrameError && f.Room == room && f.Code == client.CodeHistoryCompacted {
					return nil
				}
				if f.Type == client.FrameEvent {
					t.Fatalf("got event %d after a resume from a compacted seq", f.Seq)
				}
			}
			return testcluster.ErrNotYet
		})
		r2 := openStream(t, c, i, carol, client.StreamOptions{Resume: map[string]uint64{room: last}})
		if got := r2.waitReady(t, room); got != last {
			t.Fatalf("ready(%d), want %d", got, last)
		}
	}
}
