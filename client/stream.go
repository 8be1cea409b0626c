package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Frame types of a live stream (Frame.Type).
const (
	FrameEvent    = "event"    // one room event, in seq order
	FrameReady    = "ready"    // every event of Room up to Seq was delivered
	FrameError    = "error"    // a subscription (Room set) or the connection failed
	FramePresence = "presence" // Username came online or went offline in Room
	FrameMention  = "mention"  // Sender mentioned the user in message Seq of Room (any room)
	FrameTyping   = "typing"   // Username is typing in Room
	FrameKVReady  = "kv_ready" // kv watch KV starts at Token
	FrameKVEvent  = "kv_event" // one revision (Partition, Revision) of kv watch KV: Events, then Token
	// FrameQueueReady says queue consumer Queue runs (its first receive
	// succeeded); FrameQueueMessage delivers one leased message of it
	// (Delivery), to acknowledge with Stream.AckQueue.
	FrameQueueReady   = "queue_ready"
	FrameQueueMessage = "queue_message"
	// FrameSent says send ID (Stream.SendQueue) to Queue is durable as
	// message MessageID, sent at Ts; a refused send is an error frame with
	// Queue and ID.
	FrameSent = "sent"
)

// Error codes of error frames (Frame.Code).
const (
	CodeHistoryCompacted = "history_compacted" // resume point older than the retained history
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeSlowConsumer     = "slow_consumer" // the server closes the stream; resume
	// CodeUnauthorized, on the connection (Room empty), says the token was
	// refused or its session ended; the server closes the stream with
	// CloseUnauthorized. Stream.Next returns ErrSessionEnded for it.
	CodeUnauthorized = "unauthorized"
)

// CloseUnauthorized is the WebSocket close status that follows the
// unauthorized error frame.
const CloseUnauthorized = 4001

// ErrSessionEnded is what Stream.Next returns once the server ended the
// stream because its session ended (signed out on any node, revoked,
// expired) or refused its token, and what Client.Stream returns (wrapping
// the 401 *Error) when the handshake refuses the token. Test with
// errors.Is. Reconnecting with the same token cannot succeed: sign in
// again.
var ErrSessionEnded = errors.New("parley: session ended: sign in again")

// Frame is one frame a live stream delivers. Which fields are set depends on
// Type: events carry the event fields (Event returns them), ready frames
// Room and Seq, error frames Room (empty for the whole connection), Code
// and Message, presence frames Room, Username and Online.
type Frame struct {
	Type     string   `json:"type"`
	Room     string   `json:"room,omitempty"`
	Seq      uint64   `json:"seq,omitempty"`
	Ts       int64    `json:"ts,omitempty"`
	Kind     string   `json:"kind,omitempty"`
	Sender   string   `json:"sender,omitempty"`
	Text     string   `json:"text,omitempty"`
	To       []string `json:"to,omitempty"`
	Code     string   `json:"code,omitempty"`
	Message  string   `json:"message,omitempty"`
	Username string   `json:"username,omitempty"`
	Online   bool     `json:"online,omitempty"`
	// The rest of an event's fields (see Event).
	EventDetails
	// KV names the kv watch of kv_ready, kv_event and its error frames;
	// Token is the watch's resume token after the frame.
	KV        string    `json:"kv,omitempty"`
	Token     string    `json:"token,omitempty"`
	Partition uint64    `json:"partition,omitempty"`
	Revision  uint64    `json:"revision,omitempty"`
	Events    []KVEvent `json:"events,omitempty"`
	// Queue names the queue consumer of queue_ready, queue_message and its
	// error frames; Delivery is a queue_message frame's message.
	Queue    string        `json:"queue,omitempty"`
	Delivery *QueueMessage `json:"delivery,omitempty"`
	// ID names the send of a sent frame or of its error frame; MessageID
	// is the message a sent frame made.
	ID        string `json:"id,omitempty"`
	MessageID uint64 `json:"message_id,omitempty"`
}

// Event returns the event an event frame carries.
func (f Frame) Event() Event {
	return Event{Room: f.Room, Seq: f.Seq, Ts: f.Ts, Kind: f.Kind, Sender: f.Sender, Text: f.Text, To: f.To, EventDetails: f.EventDetails}
}

// StreamOptions choose a stream's first subscriptions and how it signs in.
type StreamOptions struct {
	// Rooms are subscribed from now.
	Rooms []string
	// Resume subscribes each room after the seq given: the stream delivers
	// every later event, then a ready frame. Stream.Positions of an earlier
	// stream is what to pass to resume it, on any node.
	Resume map[string]uint64
	// AuthFrame sends the token as the first frame, as browsers must,
	// instead of the Authorization header.
	AuthFrame bool
	// Origin, when set, is sent as the Origin header, as a browser would.
	Origin string
}

// Stream is a live stream of room events (WebSocket GET /api/v1/stream).
// Next must be called from one goroutine; Subscribe, Unsubscribe, Positions
// and Close may be called from any.
type Stream struct {
	conn *websocket.Conn

	mu  sync.Mutex
	pos map[string]uint64 // room -> last seq seen (event or ready)
}

// StreamClosedError is what Stream.Next returns once the server closed the
// stream, with the WebSocket close status (1008 after slow_consumer,
// CloseUnauthorized after the unauthorized frame, 1001 when the node shuts
// down).
type StreamClosedError struct {
	Status int
	Reason string
}

// Error implements error.
func (e *StreamClosedError) Error() string {
	return fmt.Sprintf("parley: stream closed by the server: %d %s", e.Status, e.Reason)
}

// Is reports a close with CloseUnauthorized as ErrSessionEnded.
func (e *StreamClosedError) Is(target error) bool {
	return target == ErrSessionEnded && e.Status == CloseUnauthorized
}

// Stream opens a live stream with the Client's token. A refused handshake
// (bad token, Origin or URL) returns an *Error with the server's status; a
// refused token also matches ErrSessionEnded.
func (c *Client) Stream(ctx context.Context, opts StreamOptions) (*Stream, error) {
	u, err := url.Parse(c.current() + "/api/v1/stream")
	if err != nil {
		return nil, fmt.Errorf("parley: stream URL: %w", err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	}
	u.RawQuery = streamQuery(opts)
	h := http.Header{}
	token := c.Token()
	if token != "" && !opts.AuthFrame {
		h.Set("Authorization", "Bearer "+token)
	}
	if opts.Origin != "" {
		h.Set("Origin", opts.Origin)
	}
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols && resp.Body != nil {
			apiErr := decodeError(resp)
			if apiErr.Status == http.StatusUnauthorized && token != "" {
				return nil, fmt.Errorf("%w: %w", ErrSessionEnded, apiErr)
			}
			return nil, apiErr
		}
		return nil, fmt.Errorf("parley: open stream: %w", err)
	}
	conn.SetReadLimit(1 << 20)
	s := &Stream{conn: conn, pos: map[string]uint64{}}
	for room, seq := range opts.Resume {
		s.pos[strings.ToLower(room)] = seq
	}
	if token != "" && opts.AuthFrame {
		if err := s.send(ctx, map[string]string{"type": "auth", "token": token}); err != nil {
			conn.CloseNow()
			return nil, err
		}
	}
	return s, nil
}

// streamQuery encodes the first subscriptions: ?rooms=a,b&after=a:12,b:7.
func streamQuery(opts StreamOptions) string {
	q := url.Values{}
	if len(opts.Rooms) > 0 {
		q.Set("rooms", strings.Join(opts.Rooms, ","))
	}
	if len(opts.Resume) > 0 {
		after := make([]string, 0, len(opts.Resume))
		for room, seq := range opts.Resume {
			after = append(after, room+":"+strconv.FormatUint(seq, 10))
		}
		sort.Strings(after)
		q.Set("after", strings.Join(after, ","))
	}
	return q.Encode()
}

// Next returns the next frame. The connection's unauthorized error frame
// is not returned: Next returns ErrSessionEnded instead. After the server
// closed the stream it returns a *StreamClosedError; after Close or ctx's
// end, that error.
func (s *Stream) Next(ctx context.Context) (Frame, error) {
	_, b, err := s.conn.Read(ctx)
	if err != nil {
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return Frame{}, &StreamClosedError{Status: int(ce.Code), Reason: ce.Reason}
		}
		return Frame{}, fmt.Errorf("parley: stream: %w", err)
	}
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		return Frame{}, fmt.Errorf("parley: stream: malformed frame: %w", err)
	}
	switch f.Type {
	case FrameEvent, FrameReady:
		s.mu.Lock()
		s.pos[f.Room] = max(s.pos[f.Room], f.Seq)
		s.mu.Unlock()
	case FrameError:
		if f.Room == "" && f.Code == CodeUnauthorized {
			return Frame{}, ErrSessionEnded
		}
	}
	return f, nil
}

// Subscribe subscribes to room from now: the stream sends a ready frame,
// then every later event.
func (s *Stream) Subscribe(ctx context.Context, room string) error {
	return s.send(ctx, map[string]any{"type": "subscribe", "room": room})
}

// SubscribeAfter subscribes to room after seq: every later event, then a
// ready frame once caught up (or a history_compacted error frame when seq is
// older than the retained history).
func (s *Stream) SubscribeAfter(ctx context.Context, room string, seq uint64) error {
	return s.send(ctx, map[string]any{"type": "subscribe", "room": room, "after": seq})
}

// Typing tells room's other subscribers that the caller is typing (a typing
// frame; the server drops more than one per second per room).
func (s *Stream) Typing(ctx context.Context, room string) error {
	return s.send(ctx, map[string]any{"type": "typing", "room": room})
}

// SubscribeKV starts a kv watch on the stream, beside rooms, named id
// (the frames that answer it carry it in Frame.KV): a kv_ready frame, then a
// kv_event frame per revision. opts are as for Client.KVWatch.
func (s *Stream) SubscribeKV(ctx context.Context, id string, opts WatchOptions) error {
	w := map[string]any{"id": id}
	if opts.Key != "" {
		w["key"] = opts.Key
	} else {
		w["prefix"] = opts.Prefix
	}
	if opts.After != "" {
		w["after"] = opts.After
	}
	return s.send(ctx, map[string]any{"type": "subscribe", "kv": w})
}

// UnsubscribeKV ends kv watch id.
func (s *Stream) UnsubscribeKV(ctx context.Context, id string) error {
	return s.send(ctx, map[string]any{"type": "unsubscribe", "kv": map[string]any{"id": id}})
}

// ConsumeOptions shape a queue consumer on a stream.
type ConsumeOptions struct {
	// Prefetch is how many messages the consumer holds, delivered and not
	// acknowledged, at most: 1 (the default) to 100.
	Prefetch int
	// AckTimeout is each message's lease (0: 30 s).
	AckTimeout time.Duration
	// From takes only messages from this sender.
	From string
}

// Consume starts a queue consumer on the stream, beside rooms and kv
// watches, named id (the frames that answer it carry it in Frame.Queue):
// a queue_ready frame once it runs, then a queue_message frame per
// message, leased, as long as it holds fewer than opts.Prefetch. Each
// message must be acknowledged with AckQueue; those it holds when the
// consumer or the stream ends go back to the queue at once.
func (s *Stream) Consume(ctx context.Context, id, queue string, opts ConsumeOptions) error {
	q := map[string]any{"id": id, "name": queue}
	if opts.Prefetch > 0 {
		q["prefetch"] = opts.Prefetch
	}
	if opts.AckTimeout > 0 {
		q["ack_timeout_ms"] = opts.AckTimeout.Milliseconds()
	}
	if opts.From != "" {
		q["from"] = opts.From
	}
	return s.send(ctx, map[string]any{"type": "subscribe", "queue": q})
}

// AckQueue acknowledges messages queue consumer id delivered, by their
// receipts (at most 100). A refused receipt (its lease lapsed) comes back
// as the consumer's conflict error frame; the consumer goes on.
func (s *Stream) AckQueue(ctx context.Context, id string, receipts ...string) error {
	return s.send(ctx, ackFrame{Type: "ack", Queue: queueRef{ID: id}, Receipts: receipts})
}

// ackFrame is {"type":"ack","queue":{"id"},"receipts"}.
type ackFrame struct {
	Type     string   `json:"type"`
	Queue    queueRef `json:"queue"`
	Receipts []string `json:"receipts"`
}

// queueRef names a queue consumer (ID) or a queue (Name) in a frame.
type queueRef struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

// SendQueue sends a message to queue over the stream, beside rooms and
// consumers: the server answers with a sent frame naming id (FrameSent,
// with the message's id) once the message is durable, or with an error
// frame naming queue and id. id is the send's idempotency key: sent again
// after a failure, on this stream or another, the message is not sent
// twice. Sends on one stream are applied in the order they were written,
// one after the other.
func (s *Stream) SendQueue(ctx context.Context, queue, id, body string, opts SendOptions) error {
	return s.send(ctx, sendFrame{Type: "send", Queue: queueRef{Name: queue}, ID: id, Message: messageInOf(body, opts)})
}

// sendFrame is {"type":"send","queue":{"name"},"id","message"}.
type sendFrame struct {
	Type    string    `json:"type"`
	Queue   queueRef  `json:"queue"`
	ID      string    `json:"id"`
	Message messageIn `json:"message"`
}

// StopConsuming ends queue consumer id; the messages it holds go back to
// the queue.
func (s *Stream) StopConsuming(ctx context.Context, id string) error {
	return s.send(ctx, map[string]any{"type": "unsubscribe", "queue": queueRef{ID: id}})
}

// Unsubscribe ends the subscription to room.
func (s *Stream) Unsubscribe(ctx context.Context, room string) error {
	s.mu.Lock()
	delete(s.pos, strings.ToLower(room))
	s.mu.Unlock()
	return s.send(ctx, map[string]any{"type": "unsubscribe", "room": room})
}

// Positions returns, for every room resumed at connect or seen in an
// event or ready frame, the last seq the stream delivered: pass it as StreamOptions.Resume to resume on any node with
// nothing missing and nothing twice.
func (s *Stream) Positions() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]uint64, len(s.pos))
	for room, seq := range s.pos {
		out[room] = seq
	}
	return out
}

// Close closes the stream.
func (s *Stream) Close() error {
	return s.conn.Close(websocket.StatusNormalClosure, "")
}

func (s *Stream) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := s.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("parley: stream: %w", err)
	}
	return nil
}
