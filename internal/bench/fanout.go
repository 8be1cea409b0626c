package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/parley-chat/parley/client"
)

// FanoutOptions shape the chat-fanout workload.
type FanoutOptions struct {
	ChatOptions
	// Servers are the base URLs of the target nodes, in the order of
	// Clients; subscriber s connects to Servers[s % len(Servers)].
	Servers []string
	// Token signs the streams in (the user who creates the rooms).
	Token string
	// HTTP dials the streams; nil means http.DefaultClient.
	HTTP *http.Client
	// Subscribers is the number of stream connections; each subscribes to
	// every room, so every post is delivered Subscribers times.
	Subscribers int
}

// minFanoutSize is the shortest text a fan-out post can carry: its send
// time, a separator, and a character.
const minFanoutSize = 21

// Fanout is the chat fan-out workload: Subscribers WebSocket streams
// (GET /api/v1/stream) each subscribed to every room, and posts whose text
// starts with their send time, so that each delivery's post-to-delivery
// latency is measured beside the post's own.
type Fanout struct {
	chat *Chat
	o    FanoutOptions
	pad  string

	delivery  Histogram // post-to-delivery latency of every delivery
	posted    atomic.Int64
	delivered atomic.Int64
	streamErr atomic.Int64
	lastErr   atomic.Value // string: the latest stream error

	conns  []*websocket.Conn
	stop   context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
}

// Compile-time checks that Fanout is a workload that prepares.
var (
	_ Workload = (*Fanout)(nil)
	_ Preparer = (*Fanout)(nil)
)

// NewFanout checks o and returns the workload.
func NewFanout(o FanoutOptions) (*Fanout, error) {
	switch {
	case len(o.Servers) != len(o.Clients):
		return nil, errors.New("chat-fanout workload: want one client per server")
	case o.Subscribers < 1:
		return nil, fmt.Errorf("chat-fanout workload: subscribers %d: want at least 1", o.Subscribers)
	case o.Size < minFanoutSize:
		return nil, fmt.Errorf("chat-fanout workload: size %d: want at least %d (the text carries its send time)", o.Size, minFanoutSize)
	}
	c, err := NewChat(o.ChatOptions)
	if err != nil {
		return nil, fmt.Errorf("chat-fanout workload: %s", strings.TrimPrefix(err.Error(), "chat-post workload: "))
	}
	if o.HTTP == nil {
		o.HTTP = http.DefaultClient
	}
	return &Fanout{chat: c, o: o, pad: Filler(o.Size - minFanoutSize + 1)}, nil
}

// Name implements Workload.
func (f *Fanout) Name() string { return "chat-fanout" }

// Prepare implements Preparer: it creates the rooms, opens the streams,
// subscribes each to every room and waits until every subscription is
// ready; the streams are read until Close.
func (f *Fanout) Prepare(ctx context.Context, workers int) error {
	if err := f.chat.Prepare(ctx, workers); err != nil {
		return err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	f.stop = stop
	f.conns = make([]*websocket.Conn, f.o.Subscribers)
	return Parallel(ctx, f.o.Subscribers, workers, func(ctx context.Context, _, s int) error {
		conn, err := f.subscribe(ctx, f.o.Servers[s%len(f.o.Servers)])
		if err != nil {
			return fmt.Errorf("subscriber %d: %w", s, err)
		}
		f.conns[s] = conn
		f.wg.Go(func() { f.read(rctx, conn) })
		return nil
	})
}

// subscribe opens a stream on server, subscribes it to every room from
// now on and returns once each subscription is ready.
func (f *Fanout) subscribe(ctx context.Context, server string) (*websocket.Conn, error) {
	conn, resp, err := websocket.Dial(ctx, strings.TrimRight(server, "/")+"/api/v1/stream", &websocket.DialOptions{
		HTTPClient: f.o.HTTP,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + f.o.Token}},
	})
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("open stream on %s: status %d: %w", server, resp.StatusCode, err)
		}
		return nil, fmt.Errorf("open stream on %s: %w", server, err)
	}
	conn.SetReadLimit(1 << 20)
	for _, room := range f.chat.rooms {
		b, _ := json.Marshal(map[string]string{"type": "subscribe", "room": room})
		if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
			conn.CloseNow()
			return nil, fmt.Errorf("subscribe to %s: %w", room, err)
		}
	}
	waiting := make(map[string]bool, len(f.chat.rooms))
	for _, room := range f.chat.rooms {
		waiting[room] = true
	}
	for len(waiting) > 0 {
		fr, err := readFrame(ctx, conn)
		if err != nil {
			conn.CloseNow()
			return nil, fmt.Errorf("waiting for the subscriptions to be ready: %w", err)
		}
		switch fr.Type {
		case "ready":
			delete(waiting, fr.Room)
		case "error":
			conn.CloseNow()
			return nil, fmt.Errorf("subscribe to %s: %s: %s", fr.Room, fr.Code, fr.Message)
		}
	}
	return conn, nil
}

// frame is the part of a server frame the workload reads.
type frame struct {
	Type    string `json:"type"`
	Room    string `json:"room"`
	Kind    string `json:"kind"`
	Text    string `json:"text"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// readFrame reads and decodes one frame.
func readFrame(ctx context.Context, conn *websocket.Conn) (frame, error) {
	var fr frame
	_, b, err := conn.Read(ctx)
	if err != nil {
		return fr, err
	}
	if err := json.Unmarshal(b, &fr); err != nil {
		return fr, fmt.Errorf("a frame that is not JSON: %w", err)
	}
	return fr, nil
}

// read records the latency of every post delivered on conn until ctx ends
// or the stream fails.
func (f *Fanout) read(ctx context.Context, conn *websocket.Conn) {
	for {
		fr, err := readFrame(ctx, conn)
		if err != nil {
			if ctx.Err() == nil && !f.closed.Load() {
				f.noteStreamError(fmt.Errorf("stream: %w", err))
			}
			return
		}
		switch {
		case fr.Type == "event" && fr.Kind == "message":
			sent, ok := sentAt(fr.Text)
			if !ok {
				continue // not one of ours
			}
			f.delivery.Record(time.Since(sent))
			f.delivered.Add(1)
		case fr.Type == "error":
			f.noteStreamError(fmt.Errorf("stream error %s in %s: %s", fr.Code, fr.Room, fr.Message))
		}
	}
}

// noteStreamError counts a stream failure.
func (f *Fanout) noteStreamError(err error) {
	f.streamErr.Add(1)
	f.lastErr.Store(err.Error())
}

// Op implements Workload: a post whose text starts with its send time, in
// Unix nanoseconds, and "|".
func (f *Fanout) Op(ctx context.Context, worker, i int) error {
	cl := f.o.Clients[worker%len(f.o.Clients)]
	ctx = client.WithIdempotencyKey(ctx, f.chat.run+"-"+strconv.FormatInt(f.chat.ops.Add(1), 10))
	text := fmt.Sprintf("%019d|", time.Now().UnixNano()) + f.pad
	_, err := cl.Post(ctx, f.chat.rooms[i%len(f.chat.rooms)], text, client.PostOptions{})
	if err != nil {
		return OpError("post", err)
	}
	f.posted.Add(1)
	return nil
}

// sentAt reads the send time a post's text starts with.
func sentAt(text string) (time.Time, bool) {
	if len(text) < minFanoutSize-1 || text[minFanoutSize-2] != '|' {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(text[:minFanoutSize-2], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// FanoutResult is what the subscribers saw.
type FanoutResult struct {
	// Posts counts successful posts (warm-up included), Expected the
	// deliveries they owe (Posts × Subscribers), Delivered those that
	// came.
	Posts, Expected, Delivered int64
	// Delivery is the post-to-delivery latency of every delivery.
	Delivery Latency
	// StreamErrors counts error frames and streams that failed; LastError
	// is the latest.
	StreamErrors int64
	LastError    string
}

// Finish waits up to wait for every post to reach every subscriber, closes
// the streams and returns what they saw.
func (f *Fanout) Finish(wait time.Duration) FanoutResult {
	want := func() int64 { return f.posted.Load() * int64(f.o.Subscribers) }
	deadline := time.Now().Add(wait)
	for f.delivered.Load() < want() && time.Now().Before(deadline) && f.streamErr.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	_ = f.Close()
	last, _ := f.lastErr.Load().(string)
	return FanoutResult{
		Posts: f.posted.Load(), Expected: want(), Delivered: f.delivered.Load(),
		Delivery: summarize(&f.delivery), StreamErrors: f.streamErr.Load(), LastError: last,
	}
}

// Close closes the streams.
func (f *Fanout) Close() error {
	if !f.closed.CompareAndSwap(false, true) {
		return nil
	}
	if f.stop != nil {
		f.stop()
	}
	for _, c := range f.conns {
		if c != nil {
			_ = c.CloseNow()
		}
	}
	f.wg.Wait()
	return nil
}
