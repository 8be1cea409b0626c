package chat

import "github.com/parley-chat/parley/internal/ident"

// Event kinds, as sent in the "kind" field of stream frames and history
// pages.
const (
	KindMessage = "message" // a message to every member
	KindWhisper = "whisper" // a message to chosen members (To)
	KindHidden  = "hidden"  // a whisper, or a change to one, seen by a member who is not part of it
	KindJoin    = "join"    // Sender joined the room
	KindLeave   = "leave"   // Sender left the room
	// Changes to the message Target, each an event of its own; Message is
	// the target as it is when the event is read.
	KindEdit    = "edit"    // Sender edited Target's text
	KindDelete  = "delete"  // Sender deleted Target: its text is gone
	KindReact   = "react"   // Sender reacted to Target with Emoji
	KindUnreact = "unreact" // Sender took back their Emoji reaction
	KindPin     = "pin"     // Sender pinned Target
	KindUnpin   = "unpin"   // Sender unpinned Target
	// KindMention is an entry of a user's mention inbox, never of a room:
	// Sender mentioned the user in message Target of room Origin.
	KindMention = "mention"
	// Moderation events: Sender acted on User, with an optional Reason.
	KindRole     = "role"     // Sender gave User the Role (owner: ownership moved to User)
	KindInvite   = "invite"   // Sender invited User: they may join without the password
	KindUninvite = "uninvite" // Sender withdrew User's invitation
	KindKick     = "kick"     // Sender removed User from the members
	KindBan      = "ban"      // Sender banned User until Until (0: for good)
	KindUnban    = "unban"    // Sender lifted User's ban
	KindMute     = "mute"     // Sender muted User until Until
	KindUnmute   = "unmute"   // Sender lifted User's mute
	KindSettings = "settings" // Sender changed the settings named in Changed
	// Legal holds: Sender, an admin, placed or lifted the room's hold.
	KindLegalHold       = "legal_hold"
	KindLegalHoldLifted = "legal_hold_lifted"
)

// Reaction is the reactions with one emoji to a message: Count is exact,
// Users lists the first MaxReactionUsers who reacted.
type Reaction struct {
	Emoji string   `json:"emoji"`
	Count int      `json:"count"`
	Users []string `json:"users"`
}

// Event is one entry of a room's total order. Every event has a seq, gap-free
// and increasing from 1 in each room, and a time (Unix ms) that never
// decreases along the seqs. Its JSON form is the event object of stream
// frames and history pages.
//
// Messages and whispers are shown as they are now: their current text,
// EditedAt, reactions, reply count and pin, or a tombstone (Deleted, no
// text) once deleted. Every change to a message is an event of its own whose
// Message field carries the message as it is when the event is read, so a
// reader of the stream alone (a client, a search indexer) can apply each
// change without another request.
type Event struct {
	Room string `json:"room"`
	Seq  uint64 `json:"seq"`
	Ts   int64  `json:"ts"`
	Kind string `json:"kind"`
	// Sender is who posted, joined, left or changed a message; empty in
	// hidden events.
	Sender string `json:"sender,omitempty"`
	// Text is the message's current text; empty in other events and once
	// the message is deleted.
	Text string `json:"text,omitempty"`
	// To lists a whisper's recipients (for a change to a whisper: the
	// whisper's sender and recipients); empty otherwise.
	To []string `json:"to,omitempty"`

	// ReplyTo is the seq of the thread's first message when the message is
	// a reply.
	ReplyTo uint64 `json:"reply_to,omitempty"`
	// Mentions lists the members mentioned by name, and those online when
	// @here was used; MentionRoom and MentionHere say @room and @here were.
	Mentions    []string `json:"mentions,omitempty"`
	MentionRoom bool     `json:"mention_room,omitempty"`
	MentionHere bool     `json:"mention_here,omitempty"`
	// EditedAt is the time of the latest edit, 0 if never edited.
	EditedAt int64 `json:"edited_at,omitempty"`
	// Deleted marks a deleted message's tombstone.
	Deleted bool `json:"deleted,omitempty"`
	Pinned  bool `json:"pinned,omitempty"`
	// ReplyCount and LastReplyAt describe the thread a message starts.
	ReplyCount  uint64     `json:"reply_count,omitempty"`
	LastReplyAt int64      `json:"last_reply_at,omitempty"`
	Reactions   []Reaction `json:"reactions,omitempty"`
	// Files are the files the message carries (none once deleted).
	Files []FileInfo `json:"files,omitempty"`

	// Target is the seq of the message a change is about.
	Target uint64 `json:"target,omitempty"`
	// Emoji is a reaction's emoji (react, unreact).
	Emoji string `json:"emoji,omitempty"`
	// Message is a change's target as it is now, or a reply's thread's
	// first message as it is now (with its reply count; not for a whisper);
	// absent when retention removed it.
	Message *Event `json:"current,omitempty"`
	// Origin is the room of a mention inbox entry (the event's Room is the
	// inbox).
	Origin string `json:"origin,omitempty"`

	// User is whom a moderation event is about; Role the role given (role
	// events); Until when a ban or mute ends (Unix ms, 0: for good);
	// Reason the moderator's optional reason; Changed the settings a
	// settings event changed.
	User    string   `json:"user,omitempty"`
	Role    string   `json:"role,omitempty"`
	Until   int64    `json:"until,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// ViewFor returns the event as user may see it: a whisper, or a change to
// one, becomes a hidden event carrying only its room, seq and time unless
// user is its sender or one of its recipients; every other event is
// returned unchanged. Usernames compare case-insensitively.
func (e Event) ViewFor(user string) Event {
	if !e.private() || e.involves(user) {
		return e
	}
	return Event{Room: e.Room, Seq: e.Seq, Ts: e.Ts, Kind: KindHidden}
}

// private reports whether only the event's sender and To may see it.
func (e Event) private() bool {
	return e.Kind == KindWhisper || (e.Target != 0 && len(e.To) > 0)
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
