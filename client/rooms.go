package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// RoomSpec describes a room to create.
type RoomSpec struct {
	Name    string `json:"name"`
	Private bool   `json:"private"`
	// Password is required for a private room and refused for a public one.
	Password string `json:"password,omitempty"`
	// MaxMembers 0 means the server's default.
	MaxMembers int `json:"max_members,omitempty"`
	// InviteOnly makes a private room without a password: only invited
	// users join it.
	InviteOnly bool `json:"invite_only,omitempty"`
}

// Room describes a room.
type Room struct {
	Name       string `json:"name"` // lower case: room names ignore case
	Owner      string `json:"owner"`
	Private    bool   `json:"private"`
	MaxMembers int    `json:"max_members"`
	Members    int    `json:"members"`
	CreatedAt  int64  `json:"created_at"` // Unix ms
	// LastSeq is the seq of the latest event, 0 before the first.
	LastSeq uint64 `json:"last_seq"`
	// FirstRetainedSeq is the lowest seq still in history.
	FirstRetainedSeq uint64 `json:"first_retained_seq"`
	// InviteOnly: a private room without a password, joined by invitation.
	InviteOnly  bool   `json:"invite_only"`
	Topic       string `json:"topic,omitempty"`
	Description string `json:"description,omitempty"`
	// Announcement rooms let only their owner and moderators post.
	Announcement bool `json:"announcement"`
	// SlowMode is the least seconds between two posts of a member; 0: off.
	SlowMode int `json:"slow_mode"`
	// RetentionDays is the room's own retention by age: 0 the cluster's,
	// -1 for ever, otherwise days. RetentionMessages keeps the newest that
	// many messages (0 or -1: no limit).
	RetentionDays     int64 `json:"retention_days"`
	RetentionMessages int64 `json:"retention_messages"`
	// LegalHold: an admin suspended every deletion of the room's history.
	LegalHold bool `json:"legal_hold"`
}

// RoomSummary is a room in the caller's room list.
type RoomSummary struct {
	Room
	Member bool `json:"member"` // the caller is a member
	// LastRead is the caller's read marker: LastSeq-LastRead events are
	// unread.
	LastRead uint64 `json:"last_read"`
	Online   int    `json:"online"` // members online
	// UnreadMentions counts the messages after LastRead that mention the
	// caller.
	UnreadMentions int `json:"unread_mentions"`
	// Role is the caller's role (owner, moderator, member) when a member.
	Role string `json:"role,omitempty"`
}

// Member is a member of a room.
type Member struct {
	Username string `json:"username"`
	Online   bool   `json:"online"`
	JoinedAt int64  `json:"joined_at"` // Unix ms
	Role     string `json:"role"`      // owner, moderator or member
}

// PostResult is the answer to a post.
type PostResult struct {
	Seq    uint64 `json:"seq"`
	Ts     int64  `json:"ts"` // Unix ms
	Sender string `json:"sender"`
}

// Event is one entry of a room's history, in the room's total order.
type Event struct {
	Room string `json:"room"`
	Seq  uint64 `json:"seq"`
	Ts   int64  `json:"ts"` // Unix ms
	// Kind is "message", "whisper", "hidden" (a whisper, or a change to
	// one, seen by others: seq and time only), "join", "leave", or a change
	// to a message: "edit", "delete", "react", "unreact", "pin", "unpin",
	// or a moderation event: "role", "invite", "uninvite", "kick", "ban",
	// "unban", "mute", "unmute", "settings".
	Kind   string   `json:"kind"`
	Sender string   `json:"sender,omitempty"`
	Text   string   `json:"text,omitempty"`
	To     []string `json:"to,omitempty"` // a whisper's recipients

	EventDetails
}

// EventDetails are the fields of an event beyond who, what and when: a
// message's state and a change's target.
type EventDetails struct {
	// ReplyTo is the seq of the thread's first message for a reply.
	ReplyTo uint64 `json:"reply_to,omitempty"`
	// Mentions lists the members the message mentions by name (and those
	// online for @here); MentionRoom and MentionHere say @room and @here
	// were used.
	Mentions    []string `json:"mentions,omitempty"`
	MentionRoom bool     `json:"mention_room,omitempty"`
	MentionHere bool     `json:"mention_here,omitempty"`
	EditedAt    int64    `json:"edited_at,omitempty"` // Unix ms of the latest edit
	Deleted     bool     `json:"deleted,omitempty"`   // a deleted message's tombstone
	Pinned      bool     `json:"pinned,omitempty"`
	// ReplyCount and LastReplyAt describe the thread a message starts.
	ReplyCount  uint64     `json:"reply_count,omitempty"`
	LastReplyAt int64      `json:"last_reply_at,omitempty"`
	Reactions   []Reaction `json:"reactions,omitempty"`
	// Files are the files a message carries (none once deleted).
	Files []FileInfo `json:"files,omitempty"`
	// Target is the message a change (edit, delete, react, unreact, pin,
	// unpin) is about; Message is that message as it is now, or for a
	// reply its thread's first message as it is now.
	Target  uint64 `json:"target,omitempty"`
	Emoji   string `json:"emoji,omitempty"`
	Message *Event `json:"current,omitempty"`
	// User is whom a moderation event is about (Sender acted); Role the
	// role a role event gives; Until when a ban or mute ends (Unix ms, 0:
	// for good); Reason the moderator's reason; Changed the settings a
	// settings event changed.
	User    string   `json:"user,omitempty"`
	Role    string   `json:"role,omitempty"`
	Until   int64    `json:"until,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// Reaction is the reactions with one emoji to a message: Count is exact,
// Users lists the first few who reacted.
type Reaction struct {
	Emoji string   `json:"emoji"`
	Count int      `json:"count"`
	Users []string `json:"users"`
}

// PostOptions qualify Post.
type PostOptions struct {
	// To makes the post a whisper to these members.
	To []string
	// ReplyTo makes the post a reply in that message's thread.
	ReplyTo uint64
	// Files attaches the caller's uploads to the room (UploadFile's
	// FileInfo.ID); with files the text may be empty.
	Files []string
}

// HistoryOptions select a page of history. Without HasAfter the page holds
// the latest Limit events before Before (or of all when Before is 0); with
// it, the first Limit events after After. Pages are in seq order either way.
type HistoryOptions struct {
	After    uint64
	HasAfter bool
	Before   uint64
	// Limit 0 means the server's default (50).
	Limit int
}

// CreateRoom creates a room owned by the caller, who becomes its first
// member. A name in use is an *Error with status 409.
func (c *Client) CreateRoom(ctx context.Context, spec RoomSpec) (Room, error) {
	var r Room
	_, err := c.sendJSON(ctx, http.MethodPost, "/api/v1/rooms", spec, &r)
	return r, err
}

// ListRooms returns the rooms visible to the caller: public ones and the
// private ones the caller is a member of, in name order.
func (c *Client) ListRooms(ctx context.Context) ([]RoomSummary, error) {
	var out struct {
		Rooms []RoomSummary `json:"rooms"`
	}
	_, err := c.sendJSON(ctx, http.MethodGet, "/api/v1/rooms", nil, &out)
	return out.Rooms, err
}

// DeleteRoom deletes a room (its owner or an admin may).
func (c *Client) DeleteRoom(ctx context.Context, room string) error {
	_, err := c.sendJSON(ctx, http.MethodDelete, roomPath(room, ""), nil, nil)
	return err
}

// JoinRoom makes the caller a member. A private room needs its password
// (403 without or with a wrong one); a full room is 409.
func (c *Client) JoinRoom(ctx context.Context, room, password string) (Room, error) {
	var body struct {
		Password string `json:"password,omitempty"`
	}
	body.Password = password
	var r Room
	_, err := c.sendJSON(ctx, http.MethodPost, roomPath(room, "/join"), body, &r)
	return r, err
}

// LeaveRoom removes the caller from the room's members.
func (c *Client) LeaveRoom(ctx context.Context, room string) error {
	_, err := c.sendJSON(ctx, http.MethodPost, roomPath(room, "/leave"), struct{}{}, nil)
	return err
}

// MarkRead raises the caller's read marker to seq and returns the marker
// (capped at the room's last seq; it never goes back).
func (c *Client) MarkRead(ctx context.Context, room string, seq uint64) (uint64, error) {
	var out struct {
		LastRead uint64 `json:"last_read"`
	}
	_, err := c.sendJSON(ctx, http.MethodPost, roomPath(room, "/read"), map[string]uint64{"seq": seq}, &out)
	return out.LastRead, err
}

// Members returns the room's members.
func (c *Client) Members(ctx context.Context, room string) ([]Member, error) {
	var out struct {
		Members []Member `json:"members"`
	}
	_, err := c.sendJSON(ctx, http.MethodGet, roomPath(room, "/members"), nil, &out)
	return out.Members, err
}

// Post posts text to a room the caller is a member of (a whisper when
// opts.To is set) and returns its seq.
func (c *Client) Post(ctx context.Context, room, text string, opts PostOptions) (PostResult, error) {
	body := struct {
		Text    string   `json:"text"`
		To      []string `json:"to,omitempty"`
		ReplyTo uint64   `json:"reply_to,omitempty"`
		Files   []string `json:"files,omitempty"`
	}{text, opts.To, opts.ReplyTo, opts.Files}
	var r PostResult
	_, err := c.sendJSON(ctx, http.MethodPost, roomPath(room, "/messages"), body, &r)
	return r, err
}

// History returns a page of the room's events as the caller may see them.
// Asking for events after a seq older than the retained history is an
// *Error with status 410 and code "history_compacted".
func (c *Client) History(ctx context.Context, room string, opts HistoryOptions) ([]Event, error) {
	q := url.Values{}
	if opts.HasAfter {
		q.Set("after", strconv.FormatUint(opts.After, 10))
	}
	if opts.Before != 0 {
		q.Set("before", strconv.FormatUint(opts.Before, 10))
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	var out struct {
		Messages []Event `json:"messages"`
	}
	_, err := c.getJSON(ctx, roomPath(room, "/messages"), q, &out)
	return out.Messages, err
}

func roomPath(room, suffix string) string {
	return "/api/v1/rooms/" + url.PathEscape(room) + suffix
}
