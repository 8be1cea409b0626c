package chat

import "github.com/parley-chat/parley/internal/ident"

// Event kinds, as sent in the "kind" field of stream frames and history
// pages.
const (
	KindMessage = "message" // a message to every member
	KindWhisper = "whisper" // a message to chosen members (To)
	KindHidden  = "hidden"  // a whisper seen by a member who is neither its sender nor a recipient
	KindJoin    = "join"    // Sender joined the room
	KindLeave   = "leave"   // Sender left the room
)

// Event is one entry of a room's total order. Every event has a seq, gap-free
// and increasing from 1 in each room, and a time (Unix ms) that never
// decreases along the seqs. Its JSON form is the event object of stream
// frames and history pages.
type Event struct {
	Room string `json:"room"`
	Seq  uint64 `json:"seq"`
	Ts   int64  `json:"ts"`
	Kind string `json:"kind"`
	// Sender is who posted, joined or left; empty in hidden events.
	Sender string `json:"sender,omitempty"`
	// Text is the message; empty in join, leave and hidden events.
	Text string `json:"text,omitempty"`
	// To lists a whisper's recipients; empty otherwise.
	To []string `json:"to,omitempty"`
}

// ViewFor returns the event as user may see it: a whisper becomes a hidden
// event carrying only its room, seq and time unless user is its sender or one
// of its recipients; every other event is returned unchanged. Usernames
// compare case-insensitively.
func (e Event) ViewFor(user string) Event {
	if e.Kind != KindWhisper || e.involves(user) {
		return e
	}
	return Event{Room: e.Room, Seq: e.Seq, Ts: e.Ts, Kind: KindHidden}
}

// involves reports whether user sent or receives the event.
func (e Event) involves(user string) bool {
	if ident.EqualFold(e.Sender, user) {
		return true
	}
	for _, t := range e.To {
		if ident.EqualFold(t, user) {
			return true
		}
	}
	return false
}
