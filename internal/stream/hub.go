package stream

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parley-chat/parley/internal/chat"
)

// Source feeds a Hub: the node layer, which tails local replicas and keeps
// upstream feeds from other nodes.
type Source interface {
	// Watch asks the Source to start feeding room (Publish, Advance) because
	// it has a first subscriber. It is called with the Hub's lock held and
	// must not block or call back into the Hub.
	Watch(room string)
	// Unwatch tells the Source that room has no subscribers any more. Same
	// rules as Watch.
	Unwatch(room string)
	// EventsAfter reads up to limit applied events of room with seq > after,
	// in seq order, as stored (whispers in full). It may return fewer events
	// than exist (a replica that lags); an *errs.Error with code
	// history_compacted, not_found or forbidden ends the subscription with
	// that error, any other error is retried.
	EventsAfter(ctx context.Context, room string, after uint64, limit int) ([]chat.Event, error)
}

// Config configures a Hub.
type Config struct {
	// Source feeds the Hub; required.
	Source Source
	// MaxFrames and MaxBytes bound each subscriber's queue; past either the
	// subscriber is slow. Defaults DefaultMaxFrames, DefaultMaxBytes.
	MaxFrames, MaxBytes int
	// CatchUpPage is how many events one catch-up read asks for. Default 256.
	CatchUpPage int
	// Retry is the pause before a catch-up read is tried again after a
	// failure or an empty answer from a lagging replica. Default 50ms.
	Retry time.Duration
}

// Stats are a Hub's counters.
type Stats struct {
	// Subscribers is the number of connected subscribers.
	Subscribers int64
	// Delivered counts event frames queued for subscribers.
	Delivered uint64
	// SlowConsumers counts subscribers disconnected because they fell behind.
	SlowConsumers uint64
}

// Hub fans rooms' events out to subscribers. It is safe for concurrent use.
type Hub struct {
	cfg Config

	ctx    context.Context // ends with Close; catch-ups run under it
	cancel context.CancelFunc
	bgMu   sync.Mutex // guards wg.Add against Close's wg.Wait
	bgDone bool
	wg     sync.WaitGroup

	mu     sync.Mutex
	rooms  map[string]*room
	subs   map[*Subscriber]struct{}
	closed bool

	typing typingLimit

	subscribers   atomic.Int64
	delivered     atomic.Uint64
	slowConsumers atomic.Uint64
}

// room is one room with subscribers on this node.
type room struct {
	name string

	mu    sync.Mutex
	pos   uint64 // every event up to pos is applied and readable from the Source
	known bool   // pos has been reported
	// private rooms end a subscription with forbidden once its user's leave
	// event was delivered (only members may read them); privacyKnown is
	// set once the Source reported it.
	private      bool
	privacyKnown bool
	subs         map[*Subscriber]*sub
}

// sub is one subscriber's subscription to one room. Guarded by room.mu.
type sub struct {
	s    *Subscriber
	next uint64 // the next seq to deliver
	// live: published events go straight to the subscriber; otherwise a
	// catch-up reads the missing ones from the Source.
	live    bool
	ready   bool // the ready frame was sent
	removed bool
}

// NewHub returns a Hub fed by cfg.Source.
func NewHub(cfg Config) *Hub {
	if cfg.Source == nil {
		panic("stream: Config.Source is required")
	}
	if cfg.MaxFrames <= 0 {
		cfg.MaxFrames = DefaultMaxFrames
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.CatchUpPage <= 0 {
		cfg.CatchUpPage = 256
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 50 * time.Millisecond
	}
	h := &Hub{cfg: cfg, rooms: map[string]*room{}, subs: map[*Subscriber]struct{}{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// Stats returns the Hub's counters.
func (h *Hub) Stats() Stats {
	return Stats{Subscribers: h.subscribers.Load(), Delivered: h.delivered.Load(), SlowConsumers: h.slowConsumers.Load()}
}

// Connect returns a new subscriber receiving events as user may see them.
// After Close it returns a subscriber that is already closed.
func (h *Hub) Connect(user string) *Subscriber {
	s := newSubscriber(user, h.cfg.MaxFrames, h.cfg.MaxBytes)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		s.close()
		return s
	}
	h.subs[s] = struct{}{}
	h.subscribers.Add(1)
	return s
}

// Disconnect ends every subscription of s and closes it.
func (h *Hub) Disconnect(s *Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	h.subscribers.Add(-1)
	if s.slow() {
		h.slowConsumers.Add(1)
	}
	for name := range s.rooms {
		h.removeLocked(s, name, nil)
	}
	s.close()
}

// Close disconnects every subscriber (their Next returns ErrClosed) and
// stops every catch-up. Later Connects get closed subscribers.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	subs := make([]*Subscriber, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	for _, s := range subs {
		h.Disconnect(s)
	}
	h.cancel()
	h.bgMu.Lock()
	h.bgDone = true
	h.bgMu.Unlock()
	h.wg.Wait()
}

// Subscribe subscribes s to room (its canonical name) from seq after+1: s
// gets every event with a greater seq, in order, and a ready frame once it
// has everything up to the room's live position (at once when after is
// that position; after a catch-up when it is older; once the room's feed
// reaches after when it is newer). A second Subscribe to the same room
// replaces the first. The caller checks that s's user may read the room.
func (h *Hub) Subscribe(s *Subscriber, roomName string, after uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return
	}
	if _, ok := s.rooms[roomName]; ok {
		h.removeLocked(s, roomName, nil)
	}
	r := h.rooms[roomName]
	if r == nil {
		r = &room{name: roomName, subs: map[*Subscriber]*sub{}}
		h.rooms[roomName] = r
		h.cfg.Source.Watch(roomName)
	}
	sb := &sub{s: s, next: after + 1}
	s.rooms[roomName] = sb
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs[s] = sb
	switch {
	case r.known && after == r.pos:
		sb.live, sb.ready = true, true
		enqueueReady(s, roomName, after)
	case r.known && after < r.pos:
		h.startCatchUp(r, sb)
	default: // ahead of the feed, or no position yet: hold
		sb.live = true
	}
}

// Unsubscribe ends s's subscription to room, if any.
func (h *Hub) Unsubscribe(s *Subscriber, roomName string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(s, roomName, nil)
}

// fail ends sb with an error frame, unless it was replaced or removed.
func (h *Hub) fail(s *Subscriber, roomName string, sb *sub, frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.rooms[roomName] == sb {
		h.removeLocked(s, roomName, frame)
	}
}

// removeLocked removes s's subscription to room, queueing frame (if any)
// first, and forgets the room when it was its last subscriber. h.mu must be
// held.
func (h *Hub) removeLocked(s *Subscriber, roomName string, frame []byte) {
	sb, ok := s.rooms[roomName]
	if !ok {
		return
	}
	delete(s.rooms, roomName)
	r := h.rooms[roomName]
	if r == nil {
		return
	}
	r.mu.Lock()
	sb.removed = true
	delete(r.subs, s)
	empty := len(r.subs) == 0
	if frame != nil {
		s.enqueue(frame)
	}
	r.mu.Unlock()
	if empty {
		delete(h.rooms, roomName)
		h.cfg.Source.Unwatch(roomName)
	}
}

// lookup returns the room's state, nil when it has no subscribers.
func (h *Hub) lookup(roomName string) *room {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rooms[roomName]
}

// Watching reports whether room has subscribers here.
func (h *Hub) Watching(roomName string) bool { return h.lookup(roomName) != nil }

// Position returns the live position the Source last reported for room;
// known is false before the first report or when room has no subscribers.
func (h *Hub) Position(roomName string) (pos uint64, known bool) {
	r := h.lookup(roomName)
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pos, r.known
}

// Publish hands over applied events of room, in seq order: each is
// delivered to the subscribers whose next seq it is. Events the Hub has
// already seen are ignored, and a gap (events missing before the first)
// makes the affected subscribers read the missing ones from the Source, so
// publishing from a feed that restarted or skipped ahead is safe.
func (h *Hub) Publish(roomName string, events []chat.Event) {
	r := h.lookup(roomName)
	if r == nil || len(events) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range events {
		ev := encodedEvent{e: &events[i]}
		h.advanceLocked(r, events[i].Seq, &ev)
	}
}

// Advance reports that every event of room up to pos is applied and
// readable from the Source, without handing any over: a feed's starting
// position, or a jump after the feed found its events compacted.
func (h *Hub) Advance(roomName string, pos uint64) {
	r := h.lookup(roomName)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h.advanceLocked(r, pos, nil)
}

// SetPrivate tells whether room is private: a subscriber of a private room
// gets its own leave event, then a forbidden error, and nothing more of the
// room. The Source reports it once the room exists, before its first
// Publish, and again before the events of a change. A room that turns private
// while watched resets every subscriber's connection, as a slow consumer
// (the events of the change are not delivered): each client subscribes
// again, and the subscribe check lets members back in and refuses anyone
// else, so no one who is not a member receives what is posted after.
func (h *Hub) SetPrivate(roomName string, private bool) {
	r := h.lookup(roomName)
	if r == nil {
		return
	}
	r.mu.Lock()
	turned := private && !r.private && r.privacyKnown
	r.private, r.privacyKnown = private, true
	var reset []*Subscriber
	if turned {
		for s := range r.subs {
			reset = append(reset, s)
		}
	}
	r.mu.Unlock()
	for _, s := range reset {
		if s.resync() {
			h.slowConsumers.Add(1)
		}
	}
}

// Gone ends every subscription of room with an error frame of code (the
// room was deleted: errs.NotFound's code).
func (h *Hub) Gone(roomName, code, message string) {
	frame := EncodeError(roomName, code, message)
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rooms[roomName]
	if r == nil {
		return
	}
	r.mu.Lock()
	subs := make([]*Subscriber, 0, len(r.subs))
	for s := range r.subs {
		subs = append(subs, s)
	}
	r.mu.Unlock()
	for _, s := range subs {
		h.removeLocked(s, roomName, frame)
	}
}

// SendRoom queues frame (presence) for every subscriber of room, outside the
// seq order.
func (h *Hub) SendRoom(roomName string, frame []byte) {
	r := h.lookup(roomName)
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subs {
		s.enqueue(frame)
	}
}

// advanceLocked moves room's position to pos, delivering ev (the event of
// seq pos, or nil) to the live subscribers waiting for it, starting
// catch-ups for those left behind and sending ready to those that reached
// the position. r.mu must be held.
func (h *Hub) advanceLocked(r *room, pos uint64, ev *encodedEvent) {
	if !r.known || pos > r.pos {
		r.pos, r.known = pos, true
	}
	for s, sb := range r.subs {
		if !sb.live {
			continue
		}
		if ev != nil && ev.e.Seq == sb.next {
			if !sb.ready { // held until the feed got here
				sb.ready = true
				enqueueReady(s, r.name, sb.next-1)
			}
			h.deliver(s, ev.frameFor(s.user))
			sb.next++
			if h.revokeAfter(r, sb, ev.e) {
				continue
			}
		}
		switch {
		case sb.next <= r.pos:
			sb.live = false
			h.startCatchUp(r, sb)
		case !sb.ready && sb.next-1 == r.pos:
			sb.ready = true
			enqueueReady(s, r.name, r.pos)
		}
	}
}

// revokeAfter ends sb's subscription with forbidden when e, just
// delivered, is its user leaving or being kicked from a private room, or
// being banned from any room. r.mu must be held; the subscriber keeps its
// entry for the room until it unsubscribes or disconnects, which forgets
// the room once nobody else watches it.
func (h *Hub) revokeAfter(r *room, sb *sub, e *chat.Event) bool {
	var why string
	switch {
	case r.private && e.Kind == chat.KindLeave && strings.EqualFold(e.Sender, sb.s.user):
		why = "you left this private room"
	case r.private && e.Kind == chat.KindKick && strings.EqualFold(e.User, sb.s.user):
		why = "you were removed from this private room"
	case e.Kind == chat.KindBan && strings.EqualFold(e.User, sb.s.user):
		why = "you are banned from this room"
	default:
		return false
	}
	sb.removed, sb.live = true, false
	delete(r.subs, sb.s)
	sb.s.enqueue(EncodeError(r.name, CodeForbidden, why))
	return true
}

// deliver queues an event frame for s.
func (h *Hub) deliver(s *Subscriber, frame []byte) {
	if s.enqueue(frame) {
		h.delivered.Add(1)
	}
}

// encodedEvent is a published event with its frames, each encoded at most
// once and shared by every subscriber.
type encodedEvent struct {
	e            *chat.Event
	full, hidden []byte
}

// enqueueReady queues room's ready frame for s, except for a mention
// inbox, whose events are the user's mention frames and have no place in
// any room's order.
func enqueueReady(s *Subscriber, room string, seq uint64) {
	if !IsInbox(room) {
		s.enqueue(EncodeReady(room, seq))
	}
}

// frameFor returns the frame of the event as user may see it.
func (ev *encodedEvent) frameFor(user string) []byte {
	if ev.e.Kind != chat.KindHidden {
		if v := ev.e.ViewFor(user); v.Kind == chat.KindHidden {
			if ev.hidden == nil {
				ev.hidden = EncodeEvent(v)
			}
			return ev.hidden
		}
	}
	if ev.full == nil {
		ev.full = EncodeEvent(*ev.e)
	}
	return ev.full
}
