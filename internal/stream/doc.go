// Package stream is the fan-out core of Parley's live streams (WebSocket GET
// /api/v1/stream): the frames of the public contract, bounded per-connection
// queues, and a Hub that delivers every room's events to its subscribers in
// seq order, none twice, none skipped (guarantee 5).
//
// The Hub knows nothing of Raft, storage or HTTP. A Source (the node layer)
// feeds it: Publish hands over events that are applied and readable, in seq
// order, and Advance reports a room's position without events; the Hub asks
// the Source to Watch a room when its first subscriber arrives and to
// Unwatch it when the last one leaves, and reads older events through
// Source.EventsAfter to bring a subscriber that resumes from an older seq up
// to the live position. Each subscription tracks the next seq it must get:
// a published event is delivered only when it is exactly that seq, and any
// gap (a resume from the past, a feed that skipped ahead) is filled from
// storage before the subscription goes live again, so a subscriber never
// sees a gap or a repeat, whatever the feed does.
//
// Each published event is encoded at most twice (its full form and, for a
// whisper, the hidden form others see) and the bytes are shared by every
// subscriber. Queues are bounded: a subscriber that falls too far behind is
// marked slow, its queue is dropped and its connection gets the
// slow_consumer error; publishing never blocks on a connection.
//
// A Guard keeps open streams within their sessions: it ends a stream
// (Subscriber.End with ErrSessionEnded, then the unauthorized frame and
// close CloseUnauthorized) when its token is revoked through this node, when
// a check repeated every 500 ms per distinct token finds it refused, and at
// the session's expiry.
//
// Lock order: Hub.mu, then room.mu, then Subscriber.mu. Guard.mu is a leaf:
// the Guard calls Check and end functions without it.
package stream
