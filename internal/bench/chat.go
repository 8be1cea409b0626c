package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/parley-chat/parley/client"
)

// ChatOptions shape the chat-post workload.
type ChatOptions struct {
	// Clients are one client per target node, all signed in as the same
	// user; worker w uses Clients[w % len(Clients)].
	Clients []*client.Client
	// Rooms is the number of rooms posted to; operation i posts to room
	// i % Rooms.
	Rooms int
	// Size is the length of every message text in characters (the seeds
	// measured 200 and 2000).
	Size int
	// RoomPrefix starts every room name; a random run id follows, so that
	// runs never share rooms.
	RoomPrefix string
	// Pool, when not nil, sends each post to the client of the server
	// leading its room's partition (Clients[worker] when it knows none).
	Pool *client.Pool
}

// Chat is the chat-post workload: durable posts to rooms the user has
// created (and so joined), each with its own idempotency key, as a client
// that retries safely sends them.
type Chat struct {
	o     ChatOptions
	run   string
	rooms []string
	text  string
	// ops numbers the posts of every phase (warm-up and measured), so no
	// two share an idempotency key: the phases' operation indexes both
	// start at 0, and a reused key would replay the first post.
	ops atomic.Int64
}

// Compile-time checks that Chat is a workload that prepares.
var (
	_ Workload = (*Chat)(nil)
	_ Preparer = (*Chat)(nil)
)

// NewChat checks o and returns the workload.
func NewChat(o ChatOptions) (*Chat, error) {
	if err := checkRoomOptions(o); err != nil {
		return nil, fmt.Errorf("chat-post workload: %w", err)
	}
	run := RunID()
	return &Chat{o: o, run: run, rooms: roomNames(o.RoomPrefix, run, o.Rooms), text: Filler(o.Size)}, nil
}

// checkRoomOptions validates the options chat-post and chat-fanout share.
func checkRoomOptions(o ChatOptions) error {
	switch {
	case len(o.Clients) == 0:
		return errors.New("no servers")
	case o.Rooms < 1:
		return fmt.Errorf("rooms %d: want at least 1", o.Rooms)
	case o.Size < 1:
		return fmt.Errorf("size %d: want at least 1", o.Size)
	case len(o.RoomPrefix)+len(strconv.Itoa(o.Rooms))+9 > 64:
		return fmt.Errorf("room prefix %q: too long for a room name", o.RoomPrefix)
	}
	return nil
}

// Name implements Workload.
func (c *Chat) Name() string { return "chat-post" }

// Rooms returns the names of the rooms posted to.
func (c *Chat) Rooms() []string { return c.rooms }

// Prepare implements Preparer: the rooms are created by the signed-in user,
// who thereby joins them.
func (c *Chat) Prepare(ctx context.Context, workers int) error {
	return createRooms(ctx, c.o.Clients, c.rooms, workers)
}

// Op implements Workload: one post, with an idempotency key unique to the
// run and the operation (across the warm-up and the measured phase).
func (c *Chat) Op(ctx context.Context, worker, i int) error {
	cl, room := c.o.Clients[worker%len(c.o.Clients)], c.rooms[i%len(c.rooms)]
	if c.o.Pool != nil {
		cl = c.o.Pool.ForRoom(room, cl)
	}
	ctx = client.WithIdempotencyKey(ctx, c.run+"-"+strconv.FormatInt(c.ops.Add(1), 10))
	_, err := cl.Post(ctx, room, c.text, client.PostOptions{})
	return OpError("post", err)
}

// createRooms creates every room, workers at a time, through clients in
// turn. A room that exists already counts as created when its creator is
// the caller (a retried create).
func createRooms(ctx context.Context, clients []*client.Client, rooms []string, workers int) error {
	return Parallel(ctx, len(rooms), workers, func(ctx context.Context, w, i int) error {
		cl := clients[w%len(clients)]
		_, err := cl.CreateRoom(ctx, client.RoomSpec{Name: rooms[i]})
		if ce, ok := errors.AsType[*client.Error](err); ok && ce.Status == 409 {
			_, err = cl.JoinRoom(ctx, rooms[i], "")
		}
		if err != nil {
			return fmt.Errorf("create room %s: %w", rooms[i], err)
		}
		return nil
	})
}

// roomNames returns n room names: prefix, run id, number.
func roomNames(prefix, run string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = prefix + run + "-" + strconv.Itoa(i)
	}
	return names
}

// RunID returns 8 random hex digits telling one run's rooms, queues, links,
// streams and idempotency keys from another's.
func RunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// Filler returns a text of n characters: the message bodies of the
// workloads.
func Filler(n int) string {
	const words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "
	return strings.Repeat(words, n/len(words)+1)[:n]
}

// Parallel calls do(ctx, worker, i) for every i in [0, n), from workers
// goroutines, and returns the first error, after which no new call starts.
func Parallel(ctx context.Context, n, workers int, do func(ctx context.Context, worker, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for w := range max(min(workers, n), 1) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(ctx, w, i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
